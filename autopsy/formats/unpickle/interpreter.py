"""The opcode machine: interprets pickle protocols 0-5 without importing or calling anything.

It does not use :class:`pickle.Unpickler` at all, so there is no hook that could
be forgotten. ``GLOBAL``/``STACK_GLOBAL``/``INST`` names become
:class:`~autopsy.formats.unpickle.placeholders.Global`; ``REDUCE``, ``NEWOBJ``,
``NEWOBJ_EX``, ``INST`` and ``OBJ`` become a ``Call`` record (or, for the few
constructors in :data:`~autopsy.formats.unpickle.safe_values.MATERIALISED`, a
plain value); ``BUILD``, ``APPEND(S)``, ``SETITEM(S)`` and ``ADDITEMS`` on a
``Call`` are recorded on it. Every read is bounded (see
:mod:`autopsy.formats.unpickle.limits`), as are the opcodes run and the nesting.
"""

from __future__ import annotations

import _compat_pickle
import codecs
import collections
import struct
from collections.abc import Callable
from typing import IO, Any

from autopsy.formats.unpickle.errors import PickleLimitExceeded, UnpickleError
from autopsy.formats.unpickle.limits import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_OPS,
    MAX_LONG_BYTES,
    BoundedInput,
)
from autopsy.formats.unpickle.placeholders import (
    Call,
    ExtensionRef,
    Global,
    OutOfBandBuffer,
    PersistentRef,
    check_depth,
    name_of,
)
from autopsy.formats.unpickle.safe_values import MATERIALISED


class SafeUnpickler:
    """Interpret one pickle from a binary stream without importing or calling anything.

    After :meth:`load`, :attr:`globals` holds every dotted name referenced (in
    order of first appearance), :attr:`persistent_ids` every persistent id, and
    :attr:`mutated_globals` the names a ``BUILD`` tried to set attributes on (a
    global, or an attribute of an ``OrderedDict``'s class such as ``items``).
    """

    def __init__(
        self,
        fh: IO[bytes],
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_ops: int = DEFAULT_MAX_OPS,
        max_depth: int = DEFAULT_MAX_DEPTH,
    ) -> None:
        self._in = BoundedInput(fh, max_bytes)
        self.max_ops = max_ops
        self.max_depth = max_depth
        self.globals: dict[str, None] = {}
        self.persistent_ids: list[Any] = []
        self.mutated_globals: dict[str, None] = {}
        #: (module, qualname) of globals named by a dotted qualname (an attribute path)
        self.attribute_paths: dict[tuple[str, str], None] = {}
        self._buffers = 0
        self._dispatch: dict[int, Callable[[], None]] = {
            code[0]: getattr(self, f"_op_{name}") for code, name in _OPCODES.items()
        }

    # -- public

    def load(self) -> Any:
        """Read one pickle up to its ``STOP``; return the object built.

        Raises:
            UnpickleError: on any malformed, truncated, oversized or too deep input.
        """
        self.proto = 0
        self.stack: list[Any] = []
        self.metastack: list[list[Any]] = []
        self.memo: dict[int, Any] = {}
        self._stopped = False
        self._value: Any = None
        try:
            self._run()
            check_depth(self._value, self.max_depth)
        except UnpickleError:
            raise
        except RecursionError as exc:
            raise PickleLimitExceeded("structure too deeply nested") from exc
        except MemoryError as exc:
            raise PickleLimitExceeded("out of memory while unpickling") from exc
        except Exception as exc:
            raise UnpickleError(
                f"malformed pickle near offset {self._in.pos:,}: {type(exc).__name__}: {exc}"
            ) from exc
        return self._value

    @property
    def position(self) -> int:
        """Bytes consumed so far."""
        return self._in.pos

    # -- loop

    def _run(self) -> None:
        read = self._in.read
        dispatch = self._dispatch
        ops = 0
        while not self._stopped:
            code = read(1)[0] if self._in.pos < self._in.limit else self._overflow()
            handler = dispatch.get(code)
            if handler is None:
                raise UnpickleError(
                    f"unknown opcode {code:#04x} at offset {self._in.pos - 1:,}"
                )
            ops += 1
            if ops > self.max_ops:
                raise PickleLimitExceeded(f"more than {self.max_ops:,} opcodes")
            handler()

    def _overflow(self) -> int:
        raise PickleLimitExceeded(f"no STOP within the {self._in.limit:,}-byte limit")

    # -- helpers

    def _pop_mark(self) -> list[Any]:
        if not self.metastack:
            raise UnpickleError("an opcode needs a MARK that is not there")
        items = self.stack
        self.stack = self.metastack.pop()
        return items

    def _global(self, module: str, name: str) -> Global:
        if self.proto < 3:
            if (module, name) in _compat_pickle.NAME_MAPPING:
                module, name = _compat_pickle.NAME_MAPPING[(module, name)]
            elif module in _compat_pickle.IMPORT_MAPPING:
                module = _compat_pickle.IMPORT_MAPPING[module]
        ref = Global(module, name)
        self.globals.setdefault(ref.dotted_name, None)
        if "." in name:
            self.attribute_paths.setdefault((module, name), None)
        return ref

    def _call(self, func: Any, args: Any, kwargs: Any = None, kind: str = "reduce") -> Any:
        if not isinstance(func, (Global, ExtensionRef, Call, PersistentRef)):
            raise UnpickleError(f"{kind.upper()} on a {type(func).__name__}, not a global")
        if not isinstance(args, tuple):
            args = tuple(args) if isinstance(args, list) else (args,)
        if kwargs is not None and not isinstance(kwargs, dict):
            raise UnpickleError(f"{kind.upper()} keyword arguments are not a dict")
        name = name_of(func)
        if kwargs is None and kind in ("reduce", "inst", "obj", "newobj"):
            if name == "copyreg._reconstructor" and len(args) == 3:
                cls, _base, state = args
                return Call(name_of(cls), () if state is None else (state,),
                            kind="reconstructor", func=cls)
            if name == "copyreg.__newobj__" and args:
                return Call(name_of(args[0]), args[1:], kind="newobj", func=args[0])
            if name == "copyreg.__newobj_ex__" and len(args) == 3:
                cls, a, kw = args
                if isinstance(a, tuple) and isinstance(kw, dict):
                    return Call(name_of(cls), a, kw, kind="newobj_ex", func=cls)
            maker = MATERIALISED.get(name)
            if maker is not None and kind in ("reduce", "inst", "obj"):
                try:
                    return maker(args)
                except Exception:  # Keep, or arguments the type refuses
                    pass
        return Call(name, args, kwargs, kind=kind, func=func)

    def _push(self, value: Any) -> None:
        self.stack.append(value)

    def _int(self, fmt: str, size: int) -> int:
        return struct.unpack(fmt, self._in.read(size))[0]

    def _counted(self, fmt: str, size: int) -> bytes:
        """The bytes after an unsigned length of ``size`` bytes (``fmt``), checked first."""
        return self._in.read(self._size(self._int(fmt, size)))

    def _short(self) -> bytes:
        """The bytes after a one-byte length."""
        return self._in.read(self._in.read(1)[0])

    def _size(self, n: int) -> int:
        if n > self._in.limit - self._in.pos:
            raise PickleLimitExceeded(
                f"declared length {n:,} at offset {self._in.pos:,} exceeds what may be read"
            )
        return n

    # -- opcodes: framing and control

    def _op_proto(self) -> None:
        proto = self._in.read(1)[0]
        if proto > 5:
            raise UnpickleError(f"unsupported pickle protocol {proto}")
        self.proto = proto

    def _op_frame(self) -> None:
        self._int("<Q", 8)  # frames only group opcodes; reading straight through is exact

    def _op_stop(self) -> None:
        self._value = self.stack.pop()
        self._stopped = True

    def _op_mark(self) -> None:
        if len(self.metastack) >= self.max_depth:
            raise PickleLimitExceeded(f"more than {self.max_depth} nested marks")
        self.metastack.append(self.stack)
        self.stack = []

    def _op_pop(self) -> None:
        if self.stack:
            self.stack.pop()
        else:
            self._pop_mark()

    def _op_pop_mark(self) -> None:
        self._pop_mark()

    def _op_dup(self) -> None:
        self.stack.append(self.stack[-1])

    # -- opcodes: constants and numbers

    def _op_none(self) -> None:
        self._push(None)

    def _op_newtrue(self) -> None:
        self._push(True)

    def _op_newfalse(self) -> None:
        self._push(False)

    def _op_int(self) -> None:
        data = self._in.readline()
        if data == b"00":
            self._push(False)
        elif data == b"01":
            self._push(True)
        else:
            self._push(int(data, 0))

    def _op_binint(self) -> None:
        self._push(self._int("<i", 4))

    def _op_binint1(self) -> None:
        self._push(self._in.read(1)[0])

    def _op_binint2(self) -> None:
        self._push(self._int("<H", 2))

    def _op_long(self) -> None:
        data = self._in.readline()
        if data.endswith(b"L"):
            data = data[:-1]
        if len(data) > MAX_LONG_BYTES:
            raise PickleLimitExceeded("LONG literal too long")
        self._push(int(data, 0))

    def _long(self, n: int) -> None:
        if n > MAX_LONG_BYTES:
            raise PickleLimitExceeded(f"a {n:,}-byte integer is more than allowed")
        self._push(int.from_bytes(self._in.read(n), "little", signed=True))

    def _op_long1(self) -> None:
        self._long(self._in.read(1)[0])

    def _op_long4(self) -> None:
        n = self._int("<i", 4)
        if n < 0:
            raise UnpickleError("LONG4 with a negative byte count")
        self._long(n)

    def _op_float(self) -> None:
        self._push(float(self._in.readline()))

    def _op_binfloat(self) -> None:
        self._push(self._int(">d", 8))

    # -- opcodes: strings and bytes

    def _decode_py2(self, data: bytes) -> str | bytes:
        try:
            return data.decode("ascii")
        except UnicodeDecodeError:
            return data  # non-ASCII Python 2 str: kept as bytes

    def _op_string(self) -> None:
        data = self._in.readline()
        if len(data) < 2 or data[:1] != data[-1:] or data[:1] not in (b"'", b'"'):
            raise UnpickleError("STRING argument is not quoted")
        self._push(self._decode_py2(codecs.escape_decode(data[1:-1])[0]))

    def _op_binstring(self) -> None:
        n = self._int("<i", 4)
        if n < 0:
            raise UnpickleError("BINSTRING with a negative length")
        self._push(self._decode_py2(self._in.read(self._size(n))))

    def _op_short_binstring(self) -> None:
        self._push(self._decode_py2(self._short()))

    def _op_unicode(self) -> None:
        self._push(str(self._in.readline(), "raw-unicode-escape"))

    def _op_binunicode(self) -> None:
        self._push(str(self._counted("<I", 4), "utf-8", "surrogatepass"))

    def _op_short_binunicode(self) -> None:
        self._push(str(self._short(), "utf-8", "surrogatepass"))

    def _op_binunicode8(self) -> None:
        self._push(str(self._counted("<Q", 8), "utf-8", "surrogatepass"))

    def _op_binbytes(self) -> None:
        self._push(self._counted("<I", 4))

    def _op_short_binbytes(self) -> None:
        self._push(self._short())

    def _op_binbytes8(self) -> None:
        self._push(self._counted("<Q", 8))

    def _op_bytearray8(self) -> None:
        self._push(bytearray(self._counted("<Q", 8)))

    def _op_next_buffer(self) -> None:
        self._push(OutOfBandBuffer(self._buffers))
        self._buffers += 1

    def _op_readonly_buffer(self) -> None:
        top = self.stack[-1]
        if isinstance(top, OutOfBandBuffer):
            top.readonly = True
        elif isinstance(top, bytearray):
            self.stack[-1] = bytes(top)

    # -- opcodes: containers

    def _op_empty_tuple(self) -> None:
        self._push(())

    def _op_tuple(self) -> None:
        self._push(tuple(self._pop_mark()))

    def _op_tuple1(self) -> None:
        self.stack[-1] = (self.stack[-1],)

    def _op_tuple2(self) -> None:
        self.stack[-2:] = [(self.stack[-2], self.stack[-1])]

    def _op_tuple3(self) -> None:
        self.stack[-3:] = [(self.stack[-3], self.stack[-2], self.stack[-1])]

    def _op_empty_list(self) -> None:
        self._push([])

    def _op_list(self) -> None:
        self._push(self._pop_mark())

    def _op_empty_dict(self) -> None:
        self._push({})

    def _op_dict(self) -> None:
        self._push(dict(_pairs(self._pop_mark())))

    def _op_empty_set(self) -> None:
        self._push(set())

    def _op_frozenset(self) -> None:
        self._push(frozenset(self._pop_mark()))

    def _op_append(self) -> None:
        value = self.stack.pop()
        self._extend(self.stack[-1], [value])

    def _op_appends(self) -> None:
        items = self._pop_mark()
        self._extend(self.stack[-1], items)

    def _extend(self, target: Any, items: list[Any]) -> None:
        if isinstance(target, list):
            target.extend(items)
        elif isinstance(target, Call):
            target.listitems.extend(items)
        else:
            raise UnpickleError(f"APPEND to a {type(target).__name__}")

    def _op_additems(self) -> None:
        items = self._pop_mark()
        target = self.stack[-1]
        if isinstance(target, set):
            target.update(items)
        elif isinstance(target, Call):
            target.listitems.extend(items)
        else:
            raise UnpickleError(f"ADDITEMS to a {type(target).__name__}")

    def _op_setitem(self) -> None:
        value = self.stack.pop()
        key = self.stack.pop()
        self._setitems(self.stack[-1], [key, value])

    def _op_setitems(self) -> None:
        items = self._pop_mark()
        self._setitems(self.stack[-1], items)

    def _setitems(self, target: Any, items: list[Any]) -> None:
        pairs = _pairs(items)
        if isinstance(target, dict):
            target.update(pairs)
        elif isinstance(target, Call):
            target.dictitems.extend(pairs)
        else:
            raise UnpickleError(f"SETITEM on a {type(target).__name__}")

    # -- opcodes: memo

    def _put(self, index: int) -> None:
        if index < 0:
            raise UnpickleError("negative memo index")
        self.memo[index] = self.stack[-1]

    def _get(self, index: int) -> None:
        try:
            self._push(self.memo[index])
        except KeyError:
            raise UnpickleError(f"memo entry {index} was never stored") from None

    def _op_put(self) -> None:
        self._put(int(self._in.readline()))

    def _op_binput(self) -> None:
        self._put(self._in.read(1)[0])

    def _op_long_binput(self) -> None:
        self._put(self._int("<I", 4))

    def _op_memoize(self) -> None:
        self._put(len(self.memo))

    def _op_get(self) -> None:
        self._get(int(self._in.readline()))

    def _op_binget(self) -> None:
        self._get(self._in.read(1)[0])

    def _op_long_binget(self) -> None:
        self._get(self._int("<I", 4))

    # -- opcodes: globals, calls, state

    def _op_global(self) -> None:
        module = self._in.readline().decode("utf-8")
        name = self._in.readline().decode("utf-8")
        self._push(self._global(module, name))

    def _op_stack_global(self) -> None:
        name = self.stack.pop()
        module = self.stack.pop()
        if not isinstance(module, str) or not isinstance(name, str):
            raise UnpickleError("STACK_GLOBAL needs two strings")
        self._push(self._global(module, name))

    def _ext(self, code: int) -> None:
        ref = ExtensionRef(code)
        self.globals.setdefault(ref.dotted_name, None)
        self._push(ref)

    def _op_ext1(self) -> None:
        self._ext(self._in.read(1)[0])

    def _op_ext2(self) -> None:
        self._ext(self._int("<H", 2))

    def _op_ext4(self) -> None:
        self._ext(self._int("<i", 4))

    def _op_reduce(self) -> None:
        args = self.stack.pop()
        func = self.stack[-1]
        self.stack[-1] = self._call(func, args)

    def _op_newobj(self) -> None:
        args = self.stack.pop()
        cls = self.stack[-1]
        self.stack[-1] = self._call(cls, args, kind="newobj")

    def _op_newobj_ex(self) -> None:
        kwargs = self.stack.pop()
        args = self.stack.pop()
        cls = self.stack[-1]
        self.stack[-1] = self._call(cls, args, kwargs, kind="newobj_ex")

    def _op_inst(self) -> None:
        module = self._in.readline().decode("ascii")
        name = self._in.readline().decode("ascii")
        cls = self._global(module, name)
        self._push(self._call(cls, tuple(self._pop_mark()), kind="inst"))

    def _op_obj(self) -> None:
        items = self._pop_mark()
        if not items:
            raise UnpickleError("OBJ without a class")
        self._push(self._call(items[0], tuple(items[1:]), kind="obj"))

    def _op_build(self) -> None:
        state = self.stack.pop()
        inst = self.stack[-1]
        if isinstance(inst, Call):
            inst.builds.append(state)
        elif isinstance(inst, (Global, ExtensionRef)):
            self.mutated_globals.setdefault(inst.dotted_name, None)
        elif isinstance(inst, collections.OrderedDict):
            if isinstance(state, tuple) and len(state) == 2:
                state = state[0] or {}
            if not isinstance(state, dict):
                raise UnpickleError("BUILD on an OrderedDict with a non-dict state")
            # Only the instance's own __dict__ is written (no attribute hooks run), and
            # only names the class does not have: file data never shadows a method
            # (``{"items": 0}`` would make every later ``.items()`` call fail). A state
            # that tries is recorded as a mutation of that attribute: no writer makes it.
            cls = type(inst)
            for key, value in state.items():
                name = str(key)
                if name.startswith("__") or hasattr(cls, name):
                    self.mutated_globals.setdefault(f"collections.OrderedDict.{name}", None)
                else:
                    inst.__dict__[name] = value
        else:
            raise UnpickleError(f"BUILD on a {type(inst).__name__}")

    def _op_persid(self) -> None:
        self._persistent(self._in.readline().decode("ascii"))

    def _op_binpersid(self) -> None:
        self._persistent(self.stack.pop())

    def _persistent(self, pid: Any) -> None:
        self.persistent_ids.append(pid)
        self._push(PersistentRef(pid))


def _pairs(items: list[Any]) -> list[tuple[Any, Any]]:
    """``[k1, v1, k2, v2, ...]`` as ``[(k1, v1), (k2, v2), ...]`` (an odd last item is dropped)."""
    return [(items[i], items[i + 1]) for i in range(0, len(items) - 1, 2)]


#: opcode byte -> handler name (``_op_<name>``); every opcode of protocols 0-5.
_OPCODES: dict[bytes, str] = {
    b"(": "mark", b".": "stop", b"0": "pop", b"1": "pop_mark", b"2": "dup",
    b"F": "float", b"I": "int", b"J": "binint", b"K": "binint1", b"L": "long",
    b"M": "binint2", b"N": "none", b"P": "persid", b"Q": "binpersid", b"R": "reduce",
    b"S": "string", b"T": "binstring", b"U": "short_binstring", b"V": "unicode",
    b"X": "binunicode", b"a": "append", b"b": "build", b"c": "global", b"d": "dict",
    b"}": "empty_dict", b"e": "appends", b"g": "get", b"h": "binget", b"i": "inst",
    b"j": "long_binget", b"l": "list", b"]": "empty_list", b"o": "obj", b"p": "put",
    b"q": "binput", b"r": "long_binput", b"s": "setitem", b"t": "tuple", b")": "empty_tuple",
    b"u": "setitems", b"G": "binfloat",
    b"\x80": "proto", b"\x81": "newobj", b"\x82": "ext1", b"\x83": "ext2", b"\x84": "ext4",
    b"\x85": "tuple1", b"\x86": "tuple2", b"\x87": "tuple3", b"\x88": "newtrue",
    b"\x89": "newfalse", b"\x8a": "long1", b"\x8b": "long4",
    b"B": "binbytes", b"C": "short_binbytes",
    b"\x8c": "short_binunicode", b"\x8d": "binunicode8", b"\x8e": "binbytes8",
    b"\x8f": "empty_set", b"\x90": "additems", b"\x91": "frozenset", b"\x92": "newobj_ex",
    b"\x93": "stack_global", b"\x94": "memoize", b"\x95": "frame",
    b"\x96": "bytearray8", b"\x97": "next_buffer", b"\x98": "readonly_buffer",
}
