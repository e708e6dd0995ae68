package contract

import (
	"context"
	"fmt"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// Options is what the contract workflow describes: the checkpoint at
// Source, which must open cleanly, with the xxh3 of every tensor with
// ReadData. Out, when set, is where the caller will write the contract: it
// must not be a file of the checkpoint.
type Options struct {
	Source   string
	Openers  []ckpt.SourceOpener
	Out      string
	ReadData bool
	Workers  int
	// Progress, if set, counts the bytes hashed with ReadData.
	Progress *ckpt.Progress
	// Variant selects a variant of a directory source (ckpt.Options.Variant).
	Variant string
	// Words are the caller's words for the options its messages name
	// (ckpt.Options.Words: "Variant").
	Words ckpt.Words
}

// Result is the contract of a source and the warnings of opening it
// (issues that do not fail, which the contract has no place for).
type Result struct {
	Source   string
	Contract *Contract
	Warnings []string
}

// Run is the contract workflow: it opens the source (strictly: a contract
// is what later checkpoints are held against, so a missing shard, a
// truncated file or an unknown dtype is an error), refuses an Out that is
// one of its files (*ckpt.UsageError) and computes the contract (Of). The
// result is returned with the warnings of opening even when the contract
// could not be computed.
func Run(ctx context.Context, opt Options) (*Result, error) {
	c, err := ckpt.Open(ctx, opt.Source, ckpt.Options{Workers: opt.Workers, Variant: opt.Variant, Words: opt.Words}, opt.Openers...)
	if err != nil {
		if c != nil {
			c.Close()
		}
		return nil, fmt.Errorf("%w (no contract written; ckpt verify lists every problem)", err)
	}
	defer c.Close()
	if err := ckpt.CheckOutput("-o", opt.Out, c); err != nil {
		return nil, err
	}
	res := &Result{Source: c.Source, Warnings: c.Warnings()}
	of := OfOptions{ReadData: opt.ReadData, HashOptions: HashOptions{Workers: opt.Workers}}
	if opt.ReadData {
		of.Progress = opt.Progress
	}
	k, err := Of(ctx, c, of)
	if err != nil {
		return res, err
	}
	res.Contract = k
	return res, nil
}
