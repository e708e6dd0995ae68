package verify

import (
	"slices"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// FindingIDs returns the id of every finding verify can report (the ids
// ParseAllowance takes), for the tests.
func FindingIDs() []ckpt.FindingID { return slices.Clone(findingIDs) }
