package main

import (
	"context"
	"fmt"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
	"github.com/ckpt-dev/ckpt/ckpt/contract"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/output"
	"github.com/spf13/cobra"
)

type contractOptions struct {
	Source   string
	Out      string
	ReadData bool
	Workers  int
	Variant  string
	Progress string
}

// newContractCmd is ckpt contract; runF, when set, runs instead of the
// workflow (tests of the option parsing).
func (a *App) newContractCmd(runF func(context.Context, *contractOptions) error) *cobra.Command {
	o := &contractOptions{}
	var opt contract.Options // built once, in PreRunE
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
		PreRunE: func(cmd *cobra.Command, args []string) error {
			o.Source = args[0]
			opt = o.options(a)
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return a.runContract(cmd.Context(), o, opt)
		},
	}
	f := cmd.Flags()
	addOutFlag(f, &o.Out, "write the contract to this file (atomically) instead of stdout")
	deprecatedAlias(f, "output", "", "out")
	f.BoolVar(&o.ReadData, "read-data", false, "also hash every tensor (xxh3-64 of the raw bytes)")
	f.IntVar(&o.Workers, "workers", 0, "concurrent reads (default 4)")
	addVariantFlag(f, &o.Variant)
	enumFlag(f, &o.Progress, "progress", output.ProgressAuto, progressEnum, "progress on stderr with --read-data: {}")
	return cmd
}

// options is the workflow's options (contract has no rules of its own
// beyond those every command shares: --workers, the enum flags).
func (o *contractOptions) options(a *App) contract.Options {
	return contract.Options{Source: o.Source, Openers: a.Openers, Out: o.Out, ReadData: o.ReadData, Workers: o.Workers, Variant: o.Variant,
		Words: flagWords()}
}

// runContract runs the contract workflow (contract.Run) and
// writes the contract to stdout or -o.
func (a *App) runContract(ctx context.Context, o *contractOptions, req contract.Options) error {
	// The -o file is opened first (the output policy, atomicfile.Place),
	// so that a refused or unwritable path fails before the work; the
	// workflow refuses it when it is a file of the checkpoint.
	var af *atomicfile.File
	if o.Out != "" {
		var err error
		if af, err = atomicfile.Open(o.Out, atomicfile.Policy{Flag: "-o"}); err != nil {
			return err
		}
		defer af.Abort()
	}
	stop := func() {}
	if o.ReadData {
		var err error
		if req.Progress, stop, err = a.startProgress(o.Progress, "contract"); err != nil {
			return err
		}
	}
	res, err := contract.Run(ctx, req)
	stop()
	if res != nil {
		a.warn(res.Warnings...)
	}
	if err != nil {
		return err
	}
	k := res.Contract
	k.GeneratedBy = a.generator()
	if af == nil {
		return contract.Write(a.Out, k)
	}
	if err := contract.Write(af, k); err != nil {
		return fmt.Errorf("writing %s: %w", o.Out, err)
	}
	if err := af.Commit(); err != nil {
		return err
	}
	fmt.Fprintf(a.Err, "ckpt: wrote the contract of %s (%d tensors) to %s\n", ckpt.EscapeName(res.Source), len(k.Tensors), o.Out)
	return nil
}
