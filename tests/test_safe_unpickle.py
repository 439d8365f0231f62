"""The restricted unpickler: hostile pickles are reported, never run; real files are read."""

from __future__ import annotations

import collections
import datetime
import io
import os
import pickle
import random
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from autopsy.formats import unpickle as su
from autopsy.formats.unpickle import UnpickleError, scan
from autopsy.formats.unpickle.danger import ALLOWED, DANGEROUS, UNVERIFIED, classify_global

# --------------------------------------------------------------------------- the corpus
#
# Each payload builder takes the marker path and returns (pickle bytes, dangerous name).
# Unpickled for real, every one of them creates the marker (see test_payload_is_live).


def _reducer(func: Callable[..., Any], *args: Any) -> Any:
    class Payload:
        def __reduce__(self) -> tuple[Any, ...]:
            return (func, args)

    return Payload()


def _os_system(marker: Path) -> Any:
    return _reducer(os.system, f"touch '{marker}'")


def _subprocess_call(marker: Path) -> Any:
    return _reducer(subprocess.call, ["touch", str(marker)])


def _builtins_exec(marker: Path) -> Any:
    return _reducer(exec, f"open({str(marker)!r}, 'w').close()")


def _builtins_eval(marker: Path) -> Any:
    return _reducer(eval, f"open({str(marker)!r}, 'w').close()")


REDUCERS: dict[str, tuple[Callable[[Path], Any], str]] = {
    "os.system": (_os_system, f"{os.system.__module__}.system"),
    "subprocess.call": (_subprocess_call, "subprocess.call"),
    "builtins.exec": (_builtins_exec, "builtins.exec"),
    "builtins.eval": (_builtins_eval, "builtins.eval"),
}

SYSTEM = f"{os.system.__module__}.system"  # posix.system here, nt.system on Windows


def _binunicode(text: str) -> bytes:
    data = text.encode()
    return b"X" + struct.pack("<I", len(data)) + data


def inst_protocol0(marker: Path) -> bytes:
    """INST: ``(`` args ``i`` module name, protocol 0 text."""
    cmd = f"touch '{marker}'"
    return b"(S" + repr(cmd).encode() + b"\nios\nsystem\n."


def obj_protocol1(marker: Path) -> bytes:
    """OBJ: ``(`` class args... ``o``, protocol 1 binary."""
    return b"(cos\nsystem\n" + _binunicode(f"touch '{marker}'") + b"o."


def newobj_setstate(marker: Path) -> bytes:
    """NEWOBJ an instance, BUILD ``__setstate__ = os.system`` on it, BUILD again."""
    return (
        b"\x80\x02ctypes\nSimpleNamespace\n)\x81"
        b"N}" + _binunicode("__setstate__") + b"cos\nsystem\ns\x86b"
        + _binunicode(f"touch '{marker}'") + b"b."
    )


def newobj_ex_setstate(marker: Path) -> bytes:
    """The same trick through NEWOBJ_EX and STACK_GLOBAL, protocol 4."""
    return (
        b"\x80\x04\x8c\x05types\x8c\x0fSimpleNamespace\x93)}\x92"
        b"N}" + _binunicode("__setstate__")
        + b"\x8c\x02os\x8c\x06system\x93s\x86b"
        + _binunicode(f"touch '{marker}'") + b"b."
    )


def reduce_protocol2(marker: Path) -> bytes:
    """REDUCE written by hand: GLOBAL, a 1-tuple, REDUCE."""
    return b"\x80\x02cos\nsystem\n" + _binunicode(f"touch '{marker}'") + b"\x85R."


HANDMADE: dict[str, Callable[[Path], bytes]] = {
    "inst_protocol0": inst_protocol0,
    "obj_protocol1": obj_protocol1,
    "newobj_setstate": newobj_setstate,
    "newobj_ex_setstate": newobj_ex_setstate,
    "reduce_protocol2": reduce_protocol2,
}


def corpus(marker: Path) -> dict[str, tuple[bytes, str]]:
    """Every plain-pickle payload, by case id."""
    cases: dict[str, tuple[bytes, str]] = {}
    for name, (make, dangerous) in REDUCERS.items():
        for proto in range(6):
            bare = make(marker)
            nested = {"config": {"lr": 1e-3}, "items": [1, 2, (3, make(marker))]}
            cases[f"{name}-p{proto}"] = (pickle.dumps(bare, protocol=proto), dangerous)
            cases[f"{name}-nested-p{proto}"] = (pickle.dumps(nested, protocol=proto), dangerous)
    for name, make_bytes in HANDMADE.items():
        cases[name] = (make_bytes(marker), "os.system")
    return cases


CASE_IDS = sorted(corpus(Path("/m")))


@pytest.mark.parametrize("case", CASE_IDS)
def test_payload_is_live(tmp_path: Path, case: str) -> None:
    """Control: the real unpickler runs each payload (so the safe test can fail)."""
    marker = tmp_path / "marker"
    data, _ = corpus(marker)[case]
    try:
        pickle.loads(data)
    except Exception:  # some payloads fail after running (os.system's int has no state)
        pass
    assert marker.exists()


@pytest.mark.parametrize("case", CASE_IDS)
def test_payload_is_reported_not_run(tmp_path: Path, case: str) -> None:
    marker = tmp_path / "marker"
    data, dangerous = corpus(marker)[case]
    result = su.scan(data)
    assert not marker.exists()
    assert dangerous in result.dangerous
    assert su.is_dangerous(dangerous)


def test_setstate_trick_is_recorded_on_the_placeholder(tmp_path: Path) -> None:
    result = su.scan(newobj_setstate(tmp_path / "m"))
    assert isinstance(result.obj, su.Call)
    assert result.obj.func_name == "types.SimpleNamespace"
    assert result.obj.kind == "newobj"
    slot_state = result.obj.builds[0][1]
    assert slot_state["__setstate__"] == su.Global("os", "system")
    assert result.obj.builds[1] == f"touch '{tmp_path / 'm'}'"


def test_build_on_a_global_is_reported() -> None:
    data = b"\x80\x02cargparse\nNamespace\n}" + _binunicode("x") + b"K\x01sb."
    result = su.scan(data)
    assert result.mutated_globals == ("argparse.Namespace",)
    assert "argparse.Namespace" in result.dangerous


class _TorchPayload:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch '{self.marker}'",))


@pytest.mark.parametrize("zip_format", [True, False], ids=["zip", "legacy"])
def test_torch_save_payload_is_reported_not_run(tmp_path: Path, zip_format: bool) -> None:
    torch = pytest.importorskip("torch")
    marker = tmp_path / "marker"
    path = tmp_path / "model.pt"
    torch.save({"weights": torch.zeros(3), "evil": [_TorchPayload(marker)]}, path,
               _use_new_zipfile_serialization=zip_format)
    result = su.load_torch(path)
    assert not marker.exists()
    assert result.container == ("torch_zip" if zip_format else "torch_legacy")
    assert SYSTEM in result.dangerous
    assert result.obj["evil"][0].func_name == SYSTEM
    # control: torch's own unpickler runs it
    torch.load(path, weights_only=False)
    assert marker.exists()


# --------------------------------------------------------------------------- real data


PLAIN = {
    "none": None, "t": True, "f": False, "small": 7, "neg": -70000, "big": 2**100,
    "negbig": -(2**70), "float": 1.5, "nan_free": 1e-300, "str": "héllo\n'\"", "empty": "",
    "bytes": b"\x00\xffab", "tuple": (1, (2, 3), ()), "list": [[], [1], {"k": [None]}],
    "set": {1, 2}, "frozenset": frozenset({"a"}), "ba": bytearray(b"xy"), "cx": 2 - 3j,
    "od": collections.OrderedDict([("b", 1), ("a", 2)]), "range": range(1, 9, 2),
    "slice": slice(None, 5, 2), "when": datetime.datetime(2024, 5, 6, 7, 8, 9, 10),
    "day": datetime.date(2020, 1, 2), "delta": datetime.timedelta(days=3, seconds=4),
    "long_text": "x" * 70000, "keys": {(1, 2): "tuple key", 3.5: "float key"},
}


@pytest.mark.parametrize("proto", range(6))
def test_plain_values_match_the_real_unpickler(proto: int) -> None:
    data = pickle.dumps(PLAIN, protocol=proto)
    result = su.scan(data)
    assert result.obj == pickle.loads(data)
    assert type(result.obj["od"]) is collections.OrderedDict
    assert result.dangerous == ()


@pytest.mark.parametrize("proto", range(6))
def test_shared_and_recursive_references_are_kept(proto: int) -> None:
    shared = [1, 2]
    loop: list[Any] = [shared, shared]
    loop.append(loop)
    out = su.loads(pickle.dumps(loop, protocol=proto))
    assert out[0] is out[1]
    assert out[2] is out


def test_ordered_dict_attributes_survive_build() -> None:
    state: collections.OrderedDict[str, int] = collections.OrderedDict(w=1)
    state._metadata = {"": {"version": 1}}  # type: ignore[attr-defined]
    out = su.loads(pickle.dumps(state, protocol=2))
    assert out == state
    assert out._metadata == {"": {"version": 1}}


def test_enum_values_stay_placeholders_with_their_value() -> None:
    import enum

    class Color(str, enum.Enum):
        RED = "red"

    globals()["Color"] = Color  # picklable by reference
    Color.__qualname__ = "Color"
    try:
        out = su.loads(pickle.dumps({"c": Color.RED}, protocol=2))
    finally:
        del globals()["Color"]
    assert isinstance(out["c"], su.Call)
    assert out["c"].func_name.endswith(".Color")
    assert out["c"].value == "red"


def test_out_of_band_buffers_and_extensions_are_placeholders() -> None:
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps([pickle.PickleBuffer(b"abc")], protocol=5, buffer_callback=buffers.append)
    out = su.loads(data)
    assert isinstance(out[0], su.OutOfBandBuffer)
    assert out[0].index == 0 and out[0].readonly
    ext = su.scan(b"\x80\x02\x82\x05)R.")
    assert isinstance(ext.obj, su.Call)
    assert ext.obj.func_name == "<extension 5>"
    assert ext.globals == ("<extension 5>",)


def test_persistent_ids_are_recorded_not_resolved() -> None:
    class Pickler(pickle.Pickler):
        def persistent_id(self, obj: Any) -> Any:
            return ("storage", "float", "0", "cpu", 4) if obj == "STORAGE" else None

    for proto in (0, 2, 4):
        buf = io.BytesIO()
        Pickler(buf, protocol=proto).dump({"w": "STORAGE"})
        result = su.scan(buf.getvalue())
        if proto == 0:  # PERSID: the id is text
            assert isinstance(result.obj["w"], su.PersistentRef)
        else:
            assert result.obj["w"].pid == ("storage", "float", "0", "cpu", 4)
        assert len(result.persistent_ids) == 1


def test_a_real_training_args_bin_is_read(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    args = transformers.TrainingArguments(output_dir=str(tmp_path / "out"), learning_rate=3e-4,
                                          lr_scheduler_type="cosine", report_to=[])
    path = tmp_path / "training_args.bin"
    torch.save(args, path)
    result = su.load_torch(path)
    assert result.container == "torch_zip"
    assert result.dangerous == ()
    obj = result.obj
    assert obj.func_name == "transformers.training_args.TrainingArguments"
    state = obj.state_dict
    assert state["learning_rate"] == 3e-4
    assert state["lr_scheduler_type"].value == "cosine"
    assert state["max_grad_norm"] == 1.0


@pytest.mark.parametrize("zip_format", [True, False], ids=["zip", "legacy"])
def test_an_rng_state_file_is_read_and_not_flagged(tmp_path: Path, zip_format: bool) -> None:
    torch = pytest.importorskip("torch")
    np = pytest.importorskip("numpy")
    path = tmp_path / "rng_state.pth"
    torch.save({"python": random.getstate(), "numpy": np.random.get_state(),
                "cpu": torch.random.get_rng_state()}, path,
               _use_new_zipfile_serialization=zip_format)
    result = su.load_torch(path)
    assert result.dangerous == ()
    assert result.obj["python"] == random.getstate()
    np_state = result.obj["numpy"]
    assert np_state[0] == "MT19937"
    assert isinstance(np_state[1], su.Call) and "numpy" in np_state[1].func_name
    tensor = result.obj["cpu"]
    assert tensor.func_name == "torch._utils._rebuild_tensor_v2"
    storage = tensor.args[0]
    assert isinstance(storage, su.PersistentRef)
    assert storage.storage_type == "torch.ByteStorage"
    assert storage.pid[4] == torch.random.get_rng_state().numel()
    assert any(n.startswith("numpy.") for n in result.globals)


def test_a_torn_torch_zip_is_read_through_its_first_header(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    path = tmp_path / "optimizer.pt"
    torch.save({"state": {0: {"exp_avg": torch.ones(1000)}}}, path)
    data = path.read_bytes()
    result = su.load_torch(data[: len(data) // 2])  # central directory lost
    assert result.meta.get("salvaged") is True
    assert result.obj["state"][0]["exp_avg"].func_name == "torch._utils._rebuild_tensor_v2"


# --------------------------------------------------------------------------- hostile shapes


@pytest.mark.parametrize("data,error", [
    (b"", su.PickleTruncated),
    (b"\x80\x04", su.PickleTruncated),
    (b"\x80\x06N.", su.UnpickleError),
    (b"\xff", su.UnpickleError),
    (b"N", su.PickleTruncated),
    (b".", su.UnpickleError),
    (b"\x80\x04\x8d" + struct.pack("<Q", 2**62) + b"abc", su.PickleLimitExceeded),
    (b"\x80\x04\x8e" + struct.pack("<Q", 2**40), su.PickleLimitExceeded),
    (b"\x80\x03X" + struct.pack("<I", 2**31) + b"ab", su.PickleLimitExceeded),
    (b"\x80\x02\x8b" + struct.pack("<i", 2**30), su.PickleLimitExceeded),
    (b"(" * 100_000 + b"t.", su.PickleLimitExceeded),
    (b"\x80\x02}]K\x01s.", su.UnpickleError),  # unhashable key
    (b"\x80\x02h\x07.", su.UnpickleError),  # memo never stored
    (b"\x80\x02K\x01K\x02R.", su.UnpickleError),  # REDUCE on an int
    (b"\x80\x02K\x01}b.", su.UnpickleError),  # BUILD on an int
    (b"S'unterminated\n.", su.UnpickleError),
    (b"Inot a number\n.", su.UnpickleError),
], ids=lambda v: v.__name__ if isinstance(v, type) else repr(v[:12]))
def test_bad_inputs_raise_typed_errors(data: bytes, error: type[Exception]) -> None:
    with pytest.raises(error):
        su.loads(data)


def test_nesting_through_the_memo_is_bounded() -> None:
    # A chain of lists 5000 deep built with a constant stack: each new list is
    # appended to the previous one, which is then dropped and the new one fetched.
    body = bytearray(b"\x80\x02]r\x00\x00\x00\x00")
    for i in range(1, 5000):
        body += b"]r" + struct.pack("<I", i) + b"a0j" + struct.pack("<I", i)
    body += b"0j\x00\x00\x00\x00."
    with pytest.raises(su.PickleLimitExceeded, match="deeper"):
        su.loads(bytes(body))
    assert isinstance(su.loads(bytes(body), max_depth=10_000), list)


def test_byte_and_opcode_limits() -> None:
    data = pickle.dumps(list(range(1000)), protocol=4)
    with pytest.raises(su.PickleLimitExceeded):
        su.loads(data, max_bytes=100)
    with pytest.raises(su.PickleLimitExceeded):
        su.loads(data, max_ops=50)
    assert su.loads(data) == list(range(1000))


def test_garbage_and_truncation_never_raise_anything_else() -> None:
    rng = random.Random(1234)
    seeds = [pickle.dumps(PLAIN, protocol=p) for p in range(6)]
    seeds.append(pickle.dumps(_os_system(Path("/nonexistent/x")), protocol=2))
    cases: list[bytes] = [bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 64)))
                          for _ in range(500)]
    for seed in seeds:
        cases += [seed[:cut] for cut in range(0, len(seed), max(1, len(seed) // 60))]
        for _ in range(150):
            mutated = bytearray(seed)
            for _ in range(rng.randint(1, 4)):
                mutated[rng.randrange(len(mutated))] = rng.getrandbits(8)
            cases.append(bytes(mutated))
    outcomes = collections.Counter()
    for data in cases:
        try:
            su.loads(data, max_bytes=1 << 20)
            outcomes["ok"] += 1
        except su.UnpickleError:
            outcomes["error"] += 1
    assert outcomes["error"] > 500


def test_torch_loader_rejects_non_torch_input(tmp_path: Path) -> None:
    import zipfile

    path = tmp_path / "not_torch.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("readme.txt", "hello")
    with pytest.raises(su.UnpickleError, match=r"data\.pkl"):
        su.load_torch(path)
    with pytest.raises(su.UnpickleError):
        su.load_torch(b"PK\x03\x04garbage")
    with pytest.raises(su.UnpickleError):
        su.load_torch(tmp_path / "missing.pt")
    assert su.load_torch(pickle.dumps({"a": 1})).container == "pickle"


# --------------------------------------------------------------------------- classification


@pytest.mark.parametrize("name", [
    "os.system", "posix.system", "nt.system", "subprocess.Popen", "subprocess.check_output",
    "builtins.eval", "builtins.exec", "builtins.compile", "builtins.__import__",
    "builtins.getattr", "builtins.setattr", "builtins.open", "__builtin__.apply",
    "__builtin__.eval", "runpy._run_code", "importlib.import_module", "pty.spawn",
    "socket.create_connection", "shutil.rmtree", "sys.modules.get", "webbrowser.open",
    "code.InteractiveInterpreter", "pickle.loads", "_pickle.loads", "marshal.loads",
    "ctypes.CDLL", "types.FunctionType", "types.CodeType", "operator.attrgetter",
    "operator.methodcaller", "torch.storage._load_from_bytes", "torch.hub.load",
    "numpy.testing._private.utils.runstring", "collections.OrderedDict.__class__",
    "builtins.object.__subclasses__",
])
def test_dangerous_names(name: str) -> None:
    assert su.is_dangerous(name)


@pytest.mark.parametrize("name", [
    "collections.OrderedDict", "torch._utils._rebuild_tensor_v2", "torch.FloatStorage",
    "numpy.core.multiarray._reconstruct", "numpy.dtype", "builtins.set", "copyreg._reconstructor",
    "transformers.training_args.TrainingArguments", "io.BytesIO", "codecs.encode",
    "posixpath.join", "systemd.thing", "os_utils.helper", "builtins.print", "<extension 5>",
])
def test_benign_names(name: str) -> None:
    assert not su.is_dangerous(name)


def test_referenced_globals_walks_the_result() -> None:
    obj = su.loads(pickle.dumps({"x": [_os_system(Path("/nowhere"))]}, protocol=2))
    assert SYSTEM in su.referenced_globals(obj)


def test_damaged_torch_files_raise_only_unpickle_errors(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    import zipfile

    seeds = []
    for zip_format in (True, False):
        buf = io.BytesIO()
        torch.save({"w": torch.ones(4), "step": 3}, buf, _use_new_zipfile_serialization=zip_format)
        seeds.append(buf.getvalue())
    deflated = io.BytesIO()
    with zipfile.ZipFile(deflated, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("archive/data.pkl", pickle.dumps({"a": list(range(100))}, protocol=2))
    seeds.append(deflated.getvalue())
    assert su.load_torch(seeds[-1]).obj == {"a": list(range(100))}
    rng = random.Random(99)
    errors = 0
    for seed in seeds:
        for _ in range(300):
            mutated = bytearray(seed)
            for _ in range(rng.randint(1, 6)):
                mutated[rng.randrange(len(mutated))] = rng.getrandbits(8)
            cut = rng.choice([len(mutated), rng.randrange(1, len(mutated))])
            try:
                su.load_torch(bytes(mutated[:cut]))
            except su.UnpickleError:
                errors += 1
    assert errors > 100


def test_a_payload_in_the_magic_number_pickle_of_a_legacy_file_is_reported() -> None:
    """``sample_runs/ckpt_plain_hostile_legacy``: ``os.system`` spliced into the first of the
    four pickles of a legacy torch file, which still leaves the magic number for torch."""
    from pathlib import Path

    from autopsy.formats.unpickle import load_torch

    path = (Path(__file__).resolve().parent.parent / "sample_runs" / "ckpt_plain_hostile_legacy"
            / "checkpoint.pt")
    got = load_torch(path)
    assert got.container == "torch_legacy"
    assert "os.system" in got.dangerous or "posix.system" in got.dangerous


def test_dcp_layout_lookup_is_benign_but_torch_serialization_is_not() -> None:
    from autopsy.formats.unpickle import danger_reason

    assert danger_reason("torch.serialization._get_layout") is None
    assert danger_reason("torch.serialization.load") is not None
    assert danger_reason("torch.serialization._load") is not None


def test_a_payload_in_the_storage_keys_pickle_of_a_legacy_file_is_reported() -> None:
    """The list of storage keys after a legacy file's object is a pickle torch.load reads
    too: a payload there (``os.system`` called, its result popped) must be reported."""
    import io
    import pickle
    import pickletools

    import torch

    from autopsy.formats.unpickle import load_torch

    buf = io.BytesIO()
    torch.save({"w": torch.ones(3)}, buf, _use_new_zipfile_serialization=False)
    data = buf.getvalue()
    stream = io.BytesIO(data)
    ends = []
    for _ in range(5):
        for _op in pickletools.genops(stream):
            pass
        ends.append(stream.tell())
    keys = pickle.loads(data[ends[3]:ends[4]])
    hostile = (b"\x80\x02cos\nsystem\n(X\x04\x00\x00\x00truetR0"
               + pickle.dumps(keys, protocol=2)[2:])
    assert pickle.loads(hostile.replace(b"cos\nsystem\n", b"cos\ngetpid\n")
                        .replace(b"(X\x04\x00\x00\x00truetR0", b"(tR0")) == keys
    got = load_torch(io.BytesIO(data[:ends[3]] + hostile + data[ends[4]:]))
    assert got.container == "torch_legacy"
    assert "os.system" in got.dangerous


@pytest.mark.parametrize("name", [
    "torch._utils._rebuild_tensor_v2", "torch.FloatStorage", "torch.bfloat16",
    "torch.nn.modules.linear.Linear", "torch.distributed.checkpoint.filesystem._StorageInfo",
    "transformers.training_args.TrainingArguments", "transformers.trainer_utils.IntervalStrategy",
    "accelerate.utils.dataclasses.DistributedType", "omegaconf.dictconfig.DictConfig",
    "numpy.core.multiarray._reconstruct", "numpy.dtypes.Float64DType", "collections.OrderedDict",
    "argparse.Namespace", "platform.uname_result", "_codecs.encode",
])
def test_what_real_checkpoints_hold_is_allowed(name: str) -> None:
    assert classify_global(name) == (ALLOWED, "")


@pytest.mark.parametrize("name", [
    "uuid._get_command_stdout", "__main__.Config", "transformers.utils.hub.cached_file",
    "functools.partial", "torch.multiprocessing.Process", "mymodule.helpers.run",
])
def test_names_on_neither_list_are_unverified(name: str) -> None:
    level, why = classify_global(name)
    assert level == UNVERIFIED and why


@pytest.mark.parametrize("name", ["posix.system", "builtins.eval", "torch.hub.load",
                                  "torch.load", "subprocess.Popen"])
def test_denylisted_names_stay_dangerous(name: str) -> None:
    assert classify_global(name)[0] == DANGEROUS


def test_a_dotted_qualname_through_a_trusted_module_is_dangerous() -> None:
    # STACK_GLOBAL('torch', 'os.system') at protocol 4: find_class does getattr(torch, 'os')
    data = (b"\x80\x04" + b"\x8c\x05torch\x94\x8c\x09os.system\x94\x93\x8c\x02id\x94\x85R"
            + b"0N.")
    got = scan(data)
    assert got.attribute_paths == (("torch", "os.system"),)
    assert "torch.os.system" in got.dangerous
    unsafe, unverified = got.judged()
    assert [n for n, _ in unsafe] == ["torch.os.system"] and not unverified
    # a dotted path that reaches no dangerous module is still never allowed
    harmless = b"\x80\x04\x8c\x01a\x94\x8c\x03B.C\x94\x93)R0N."
    unsafe, unverified = scan(harmless).judged()
    assert not unsafe and [n for n, _ in unverified] == ["a.B.C"]


def test_the_names_before_a_parse_failure_are_kept() -> None:
    data = b"\x80\x02cposix\nsystem\nX\x02\x00\x00\x00id\x85R\xff"
    with pytest.raises(UnpickleError) as info:
        scan(data)
    assert info.value.globals_seen == ("posix.system",)


def test_a_build_never_shadows_an_ordered_dict_method() -> None:
    """``BUILD {"items": 0}`` on an OrderedDict (issue 19): the audit called ``.items()`` and
    failed with "'int' object is not callable", losing the unsafe global before it."""
    payload = (b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00trueR0"
               b"ccollections\nOrderedDict\n)R}(X\x05\x00\x00\x00itemsK\x00"
               b"X\t\x00\x00\x00_metadataK\x01ub.")
    got = su.scan(io.BytesIO(payload))
    assert type(got.obj) is collections.OrderedDict
    assert list(got.obj.items()) == [] and got.obj._metadata == 1
    unsafe, _ = got.judged()
    assert [name for name, _ in unsafe] == ["os.system", "collections.OrderedDict.items"]
