module github.com/ckpt-dev/ckpt/cache/build/_asm

go 1.26.8

require github.com/mmcloughlin/avo v0.5.0

require (
	github.com/ckpt-dev/ckpt/asmgen v0.0.0
	golang.org/x/mod v0.6.0 // indirect
	golang.org/x/sys v0.1.0 // indirect
	golang.org/x/tools v0.2.0 // indirect
)

replace github.com/ckpt-dev/ckpt/asmgen => ../../../cmd/internal/_asmgen
