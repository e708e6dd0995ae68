package arch

import (
	"sort"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// The FP8 module table follows huggingface/transformers
// src/transformers/integrations/finegrained_fp8.py@v5.23.0
// (replace_with_fp8_linear, FP8Experts) and
// src/transformers/models/{llama/modeling_llama.py, qwen3/modeling_qwen3.py,
// qwen3_moe/modeling_qwen3_moe.py, qwen3_next/modeling_qwen3_next.py,
// gpt_oss/modeling_gpt_oss.py}@v5.23.0: transformers' FineGrainedFP8
// quantizer replaces (replace_with_fp8_linear) every module whose type is
// exactly nn.Linear by an FP8Linear and every module named "*.experts" by
// an FP8Experts, unless should_convert_module keeps it
// (quant.NotConvertList); FP8Experts refuses expert biases (its __init__
// asserts has_bias is False). The modules of each family are the nn.Linear
// and experts modules its modeling file builds.

// The classes replace_with_fp8_linear builds for a converted module.
const (
	FP8Linear  = "FP8Linear"  // for an nn.Linear
	FP8Experts = "FP8Experts" // for a module named "*.experts" (a layer's stacked experts)
)

// fp8Family is one family of the table: the nn.Linear modules of each
// decoder layer (relative to model.layers.N.), whether its layers have a
// stacked experts module (mlp.experts) and whether that module has biases
// (which FP8Experts refuses), and the *ForCausalLM class.
type fp8Family struct {
	class        string
	linears      []string
	experts      bool
	expertBiases bool
}

var (
	attnLinears = []string{"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj"}
	mlpLinears  = []string{"mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"}
)

// fp8Families is the table, by model_type (transformers' code, above). lm_head is
// an nn.Linear of every *ForCausalLM. The routers (Qwen3MoeTopKRouter and
// Qwen3NextTopKRouter at mlp.gate, GptOssTopKRouter at mlp.router), the
// norms, the embeddings, Qwen3-Next's conv1d and GPT-OSS's sinks are no
// nn.Linear and are never converted.
var fp8Families = map[string]fp8Family{
	// LlamaAttention q/k/v/o_proj, LlamaMLP gate/up/down_proj.
	"llama": {class: "LlamaForCausalLM", linears: concat(attnLinears, mlpLinears)},
	// Qwen3Attention, Qwen3MLP (q_norm/k_norm are RMSNorms).
	"qwen3": {class: "Qwen3ForCausalLM", linears: concat(attnLinears, mlpLinears)},
	// Qwen3MoeAttention; Qwen3MoeSparseMoeBlock's experts
	// (Qwen3MoeExperts) or, in mlp_only_layers, Qwen3MoeMLP.
	"qwen3_moe": {class: "Qwen3MoeForCausalLM", linears: concat(attnLinears, mlpLinears), experts: true},
	// Qwen3NextAttention (full-attention layers), Qwen3NextGatedDeltaNet
	// in_proj_qkvz/in_proj_ba/out_proj (linear-attention layers);
	// Qwen3NextSparseMoeBlock's experts, shared_expert (Qwen3NextMLP) and
	// shared_expert_gate (nn.Linear(hidden, 1)), or Qwen3NextMLP in
	// mlp_only_layers. mtp.* is not built (_keys_to_ignore_on_load_unexpected).
	"qwen3_next": {class: "Qwen3NextForCausalLM", linears: concat(attnLinears, mlpLinears,
		[]string{"linear_attn.in_proj_qkvz", "linear_attn.in_proj_ba", "linear_attn.out_proj",
			"mlp.shared_expert.gate_proj", "mlp.shared_expert.up_proj", "mlp.shared_expert.down_proj", "mlp.shared_expert_gate"}), experts: true},
	// GptOssAttention q/k/v/o_proj (with biases); GptOssMLP's experts
	// (GptOssExperts: gate_up_proj, down_proj and their biases).
	"gpt_oss": {class: "GptOssForCausalLM", linears: attnLinears, experts: true, expertBiases: true},
}

func concat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// FP8ModuleTypes are the model types the FP8 module table knows, sorted.
func FP8ModuleTypes() []string {
	out := make([]string, 0, len(fp8Families))
	for t := range fp8Families {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// FP8Modules knows, for a model type of the table (transformers' code, above), which
// tensors are the weights of modules transformers' FineGrainedFP8 quantizer
// converts unless modules_to_not_convert keeps them: the families without
// an architecture profile of their own (llama, qwen3, qwen3_moe,
// qwen3_next, gpt_oss). It knows the decoder layers (model.layers.N.*) and
// lm_head.weight, the layout of the family's *ForCausalLM; no other tensor
// (another class's head, a tensor outside model.layers) is checked.
type FP8Modules struct {
	// ModelType is the family's model_type, Class its *ForCausalLM.
	ModelType, Class string
	fam              fp8Family
}

// FP8ModulesOf is the table's entry for cfg's model_type, and whether
// there is one.
func FP8ModulesOf(cfg *ckpt.Config) (*FP8Modules, bool) {
	if cfg == nil {
		return nil, false
	}
	f, ok := fp8Families[cfg.ModelType()]
	if !ok {
		return nil, false
	}
	return &FP8Modules{ModelType: cfg.ModelType(), Class: f.class, fam: f}, true
}

// ExpertBiases reports whether the family's experts module has biases, so
// that transformers' FP8Experts refuses it: a model whose experts
// modules_to_not_convert does not keep does not load at all.
func (m *FP8Modules) ExpertBiases() bool { return m.fam.expertBiases }

// Module returns the module a tensor is the weight of when the quantizer
// converts that module, and the class it becomes (FP8Linear or
// FP8Experts): model.layers.N.<linear>.weight and lm_head.weight are
// FP8Linear weights; the experts of a layer, stored one projection per
// expert (mlp.experts.E.{gate,up,down}_proj.weight, as save_pretrained
// writes them) or stacked (mlp.experts.gate_up_proj, mlp.experts.down_proj),
// are the weights of its FP8Experts module model.layers.N.mlp.experts.
// Biases, norms, routers and every other tensor: "", "", false.
func (m *FP8Modules) Module(name string) (module, class string, ok bool) {
	if name == "lm_head.weight" {
		return "lm_head", FP8Linear, true
	}
	const layers = "model.layers."
	if !strings.HasPrefix(name, layers) {
		return "", "", false
	}
	rest := name[len(layers):]
	dot := strings.IndexByte(rest, '.')
	if dot <= 0 || !isIndex(rest[:dot]) {
		return "", "", false
	}
	layer, rest := name[:len(layers)+dot+1], rest[dot+1:]
	if mod, found := strings.CutSuffix(rest, ".weight"); found {
		for _, l := range m.fam.linears {
			if mod == l {
				return layer + mod, FP8Linear, true
			}
		}
	}
	if !m.fam.experts {
		return "", "", false
	}
	e, found := strings.CutPrefix(rest, "mlp.experts.")
	if !found {
		return "", "", false
	}
	switch e {
	case "gate_up_proj", "down_proj":
		return layer + "mlp.experts", FP8Experts, true
	}
	if i := strings.IndexByte(e, '.'); i > 0 && isIndex(e[:i]) {
		switch e[i+1:] {
		case "gate_proj.weight", "up_proj.weight", "down_proj.weight":
			return layer + "mlp.experts", FP8Experts, true
		}
	}
	return "", "", false
}

// isIndex reports whether s is a module index as PyTorch names them: a
// decimal number without sign (strconv would take "+1").
func isIndex(s string) bool {
	if s == "" || s[0] < '0' || s[0] > '9' {
		return false
	}
	_, err := strconv.ParseUint(s, 10, 32)
	return err == nil
}
