package mapping

import "github.com/ckpt-dev/ckpt/ckpt"

// The names only the tests of mapping use, and the unexported helpers its
// (external) tests call by their former names.

// DeviceName is deviceName with no words, for the tests.
func DeviceName(arch string, n int) (string, error) { return deviceName(arch, n, nil) }

// VisionPrefix is visionPrefix, for the tests.
const VisionPrefix = visionPrefix

// Eval is evalExpr, for the tests.
var Eval = evalExpr

// Vars are exprVars, for the tests.
type Vars = exprVars

// ApplyValues is applyValues, for the tests.
var ApplyValues = applyValues

// Devices is the number of devices of the mesh, for the tests.
func (m Mesh) Devices() int { return m.devices() }

// DeviceFor is deviceFor, for the tests.
func (p *Profile) DeviceFor(m Mesh) (string, error) { return p.deviceFor(m, nil) }

// ResolveAll is resolveAll, for the tests.
func (p *Profile) ResolveAll(m Mesh, set Settings) error { return p.resolveAll(m, set) }

// Select is selectBy, for the tests.
func (r Document) Select(m *ckpt.Matcher) Document { return r.selectBy(m) }

// VisionFolder is the cache folder the qwen36 vision tower writes under a
// device folder: tt_transformers' ModelArgs.weight_cache_path for
// bfloat8_b weights (models/tt_transformers/tt/model_config.py@0039cbf0),
// without the mesh suffix of the text model's folder, and with "instruct"
// when ModelArgs.instruct is set (HF_MODEL, lower-cased, contains
// "instruct" or "it").
func VisionFolder(device string, instruct bool) string {
	if instruct {
		return device + "/tensor_cache_instruct_bfp8"
	}
	return device + "/tensor_cache_bfp8"
}
