package main

import (
	"context"
	"fmt"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
	"github.com/ckpt-dev/ckpt/ckpt/verify"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/output"
	"github.com/spf13/cobra"
)

type contractOptions struct {
	Source   string
	Out      string
	ReadData bool
	Workers  int
	Progress string
}

func (a *App) newContractCmd() *cobra.Command {
	o := &contractOptions{}
	cmd := &cobra.Command{
		Use:   "contract SRC",
		Short: "Write the checkpoint's structural contract (keys, dtypes, shapes, FP8 scheme, config; --read-data: xxh3 per tensor) as JSON",
		Long: `contract writes what a later checkpoint must keep to replace this one: every key with its
dtype and shape, the FP8 scheme (method, fmt, block size, scale dtypes, modules_to_not_convert,
which tensors are FP8), the whole config.json (nested configs included) but its bookkeeping keys
(transformers_version, _name_or_path, torch_dtype/dtype, generation defaults), and with
--read-data the xxh3 of every tensor. Hold a checkpoint against it with:
ckpt verify NEW --against FILE (contract_version 2; version-1 files still load).`,
		Example: `  ckpt contract ./base --read-data -o base.contract.json
  ckpt verify ./finetune --against base.contract.json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Source = args[0]
			return a.runContract(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	addOutFlag(f, &o.Out, "write the contract to this file (atomically) instead of stdout")
	deprecatedAlias(f, "output", "", "out")
	f.BoolVar(&o.ReadData, "read-data", false, "also hash every tensor (xxh3-64 of the raw bytes)")
	f.IntVar(&o.Workers, "workers", 0, "concurrent reads (default 4)")
	enumFlag(f, &o.Progress, "progress", output.ProgressAuto, progressEnum, "progress on stderr with --read-data: {}")
	return cmd
}

func (a *App) runContract(ctx context.Context, o *contractOptions) error {
	// A contract is what later checkpoints are held against, so it is
	// written only from a checkpoint that opens cleanly: a missing shard, a
	// truncated file or an unknown dtype is an error (run verify to see all).
	c, err := a.open(ctx, o.Source, ckpt.Options{Workers: o.Workers})
	if err != nil {
		if c != nil {
			c.Close()
		}
		return fmt.Errorf("%w (no contract written; ckpt verify lists every problem)", err)
	}
	defer c.Close()
	if o.Out != "" {
		if in, ok := c.InputAt(o.Out); ok {
			return usageError("-o %s is %s, a file of the checkpoint being read: refusing to write over an input", o.Out, in)
		}
	}
	a.warnIssues(c)
	opt := verify.Options{Workers: o.Workers, ReadData: o.ReadData}
	stop := func() {}
	if o.ReadData {
		opt.Progress = ckpt.NewProgress()
		if stop, err = output.StartProgress(o.Progress, a.ErrTerm, a.Err, "contract", opt.Progress); err != nil {
			return usageError("%v", err)
		}
	}
	k, err := verify.ContractOf(ctx, c, opt)
	stop()
	if err != nil {
		return err
	}
	if o.Out == "" {
		return verify.WriteContract(a.Out, k)
	}
	af, err := atomicfile.Create(o.Out)
	if err != nil {
		return err
	}
	defer af.Abort()
	if err := verify.WriteContract(af, k); err != nil {
		return fmt.Errorf("writing %s: %w", o.Out, err)
	}
	if err := af.Commit(); err != nil {
		return err
	}
	fmt.Fprintf(a.Err, "ckpt: wrote the contract of %s (%d tensors) to %s\n", ckpt.EscapeName(c.Source), len(k.Tensors), o.Out)
	return nil
}
