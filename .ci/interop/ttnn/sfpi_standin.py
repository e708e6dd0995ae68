"""The compiler stand-in that lets the mock cluster open a mesh device.

What it is: a runtime root for tt-metal (TT_METAL_RUNTIME_ROOT) made of
symbolic links to the installed `ttnn` package's own folders, plus a
`runtime/sfpi/` of our own: `compiler/bin/riscv-tt-elf-g++`, a two-line shell
script written here that prints one version line and exits, and an empty
`include/`. No compiler is installed and the venv is not modified.

Why no real compiler is needed: on a mock cluster tt-metal compiles no
kernel. Opening a mesh (ttnn.open_mesh_device) only looks for the SFPI
toolchain at <runtime root>/runtime/sfpi (then /opt/tenstorrent/sfpi; "sfpi
not found" otherwise) and runs `riscv-tt-elf-g++ --version` to derive the
firmware build key. When the version matches the one the wheel's
pre-compiled firmware was built with, tt-metal takes that firmware
(tt_metal/pre-compiled/<key>/...) and never calls the compiler again; any
other version makes it try to build firmware with the script, which fails.
The version comes from the firmware itself: the `.comment` section of
tt_metal/pre-compiled/*/brisc/brisc.elf ("GCC: (tenstorrent/sfpi:7.89.0[1050])
15.1.0" for ttnn 0.81.1), printed as `riscv-tt-elf-g++ (...) 15.1.0`.

    python sfpi_standin.py ROOT    builds ROOT, prints the version line
"""

import glob
import os
import struct
import sys


def elf_section(path, name):
    """The bytes of section `name` of the ELF file at path (32- or 64-bit,
    little-endian), or None."""
    with open(path, "rb") as f:
        b = f.read()
    if b[:4] != b"\x7fELF" or b[5] != 1:
        raise ValueError(f"{path}: not a little-endian ELF file")
    if b[4] == 1:  # ELFCLASS32
        shoff, = struct.unpack_from("<I", b, 0x20)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x2E)
        entry = lambda i: struct.unpack_from("<IIIIII", b, shoff + i * shentsize)  # name, type, flags, addr, offset, size
    else:  # ELFCLASS64
        shoff, = struct.unpack_from("<Q", b, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", b, 0x3A)
        entry = lambda i: struct.unpack_from("<IIQQQQ", b, shoff + i * shentsize)
    strtab = entry(shstrndx)
    names = b[strtab[4]:strtab[4] + strtab[5]]
    for i in range(shnum):
        e = entry(i)
        if names[e[0]:names.index(b"\0", e[0])].decode() == name:
            return b[e[4]:e[4] + e[5]]
    return None


def compiler_version(pkg):
    """The riscv-tt-elf-g++ version line the pre-compiled firmware of the
    ttnn package at pkg was built with (every brisc.elf must agree)."""
    found = set()
    for elf in sorted(glob.glob(os.path.join(pkg, "tt_metal", "pre-compiled", "*", "brisc", "brisc.elf"))):
        comment = elf_section(elf, ".comment") or b""
        for s in comment.split(b"\0"):
            if s.startswith(b"GCC: "):
                found.add("riscv-tt-elf-g++ " + s[len(b"GCC: "):].decode())
    if len(found) != 1:
        raise RuntimeError(f"{pkg}: want one compiler version in tt_metal/pre-compiled/*/brisc/brisc.elf, found {sorted(found)}")
    return found.pop()


def make_runtime_root(pkg, root):
    """Builds the runtime root at root for the ttnn package at pkg and
    returns the version line its stand-in prints."""
    version = compiler_version(pkg)
    os.makedirs(os.path.join(root, "runtime", "sfpi", "compiler", "bin"))
    os.makedirs(os.path.join(root, "runtime", "sfpi", "include"))
    for e in os.listdir(pkg):
        if e != "runtime":
            os.symlink(os.path.join(pkg, e), os.path.join(root, e))
    for e in os.listdir(os.path.join(pkg, "runtime")):
        if e != "sfpi":
            os.symlink(os.path.join(pkg, "runtime", e), os.path.join(root, "runtime", e))
    gxx = os.path.join(root, "runtime", "sfpi", "compiler", "bin", "riscv-tt-elf-g++")
    with open(gxx, "w") as f:
        # Not a compiler: it answers --version (tt-metal's only call on a
        # mock cluster) and refuses anything else.
        f.write("#!/bin/sh\n[ \"$1\" = --version ] && { echo '%s'; exit 0; }\n"
                "echo 'riscv-tt-elf-g++: a version-answering stand-in of the ckpt ttnn leg, not a compiler' >&2; exit 1\n" % version)
    os.chmod(gxx, 0o755)
    return version


if __name__ == "__main__":
    import importlib.util
    pkg = os.path.dirname(importlib.util.find_spec("ttnn").origin)
    print(make_runtime_root(pkg, sys.argv[1]))
