"""A restricted unpickler that never imports or calls anything named by the file.

Safety model
------------
This is an interpreter of the pickle opcodes (protocols 0 to 5) written from
scratch; it does not use :class:`pickle.Unpickler` at all, so there is no hook
that could be forgotten. It builds only plain Python values (``None``, bools,
ints, floats, str, bytes, bytearray, tuples, lists, dicts, sets, frozensets)
and inert placeholders:

* every ``GLOBAL`` / ``STACK_GLOBAL`` / ``INST`` name becomes a :class:`Global`
  recording ``module`` and ``name``; no module is imported;
* ``REDUCE``, ``NEWOBJ``, ``NEWOBJ_EX``, ``INST`` and ``OBJ`` on a placeholder
  produce a :class:`Call` recording the callable's dotted name, its args and
  kwargs; ``BUILD`` records the state on it (``Call.state``); ``APPEND(S)`` /
  ``SETITEM(S)`` / ``ADDITEMS`` on it are recorded too. Nothing is called;
* persistent ids (``PERSID``/``BINPERSID``: torch storages) become
  :class:`PersistentRef` carrying the id as loaded; nothing is resolved, so a
  ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)`` call
  stays a :class:`Call` whose args describe the tensor without its bytes;
* extension codes (``EXT1/2/4``) become :class:`ExtensionRef`; out-of-band
  buffers (``NEXT_BUFFER``) become :class:`OutOfBandBuffer`.

A few constructors whose behaviour is fixed and harmless are *materialised*
into real values, after checking their arguments' types, so the data is usable
(see :data:`MATERIALISED`): ``collections.OrderedDict``, ``builtins.set``,
``frozenset``, ``bytearray``, ``bytes``, ``complex``, ``slice``, ``range``,
``_codecs.encode`` (how protocol 2 spells bytes), ``datetime.*`` and
``decimal.Decimal``. ``copyreg._reconstructor`` / ``__newobj__`` /
``__newobj_ex__`` (how protocols 0-2 spell "make an instance of class X") become
a :class:`Call` named for X. Enum members stay placeholders; ``Call.value``
gives their value. Anything whose arguments do not fit stays a placeholder.

The names a pickle references are collected while it is read (including names
that do not survive into the result); :func:`is_dangerous` classifies them
(``os.system``, ``subprocess.*``, ``builtins.eval`` ...), so a hostile file is
*reported*, never run.

Resources are bounded: the bytes read (``max_bytes``), the opcodes executed
(``max_ops``, which bounds the objects made), the nesting of marks and of the
result (``max_depth``), and every declared length is checked against what is
left before anything is allocated. Every failure is an :class:`UnpickleError`
(or one of its subclasses); no other exception escapes :func:`load`.

Torch files: :func:`load_torch` reads the ``<archive>/data.pkl`` of a torch zip
file (also from a zip with a torn tail, through its first local header) and the
legacy non-zip format (magic number, protocol version, sys_info, then the
object, then raw storages that are not read).
"""

from __future__ import annotations

import _compat_pickle
import codecs
import collections
import datetime
import decimal
import io
import os
import struct
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_OPS",
    "Call",
    "ExtensionRef",
    "Global",
    "OutOfBandBuffer",
    "PersistentRef",
    "PickleLimitExceeded",
    "PickleTruncated",
    "SafeUnpickler",
    "UnpickleError",
    "Unpickled",
    "danger_reason",
    "is_dangerous",
    "load",
    "load_torch",
    "loads",
    "referenced_globals",
    "scan",
    "walk",
]

#: Default cap on the bytes one pickle may take (256 MiB).
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
#: Default cap on the opcodes one pickle may execute (bounds objects made).
DEFAULT_MAX_OPS = 10_000_000
#: Default cap on nesting: open marks, and depth of the result.
DEFAULT_MAX_DEPTH = 256
#: Longest ``LONG1``/``LONG4`` integer accepted, in bytes.
MAX_LONG_BYTES = 64 * 1024
#: Reads above this size are done in chunks of this size.
_CHUNK = 1 << 20

#: The magic number that opens a legacy (non-zip) torch file.
TORCH_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C


# --------------------------------------------------------------------------- errors


class UnpickleError(ValueError):
    """The input is not a pickle this module can read safely (any reason)."""


class PickleTruncated(UnpickleError):
    """The input ended before the pickle's ``STOP`` opcode."""


class PickleLimitExceeded(UnpickleError):
    """The input would exceed a size, opcode-count or nesting limit."""


# --------------------------------------------------------------------------- placeholders


@dataclass(frozen=True)
class Global:
    """A global (class or function) named by the pickle; never imported."""

    module: str
    name: str

    @property
    def dotted_name(self) -> str:
        """``module.qualname``, e.g. ``"os.system"``."""
        return f"{self.module}.{self.name}"

    def __repr__(self) -> str:
        return f"Global({self.dotted_name!r})"


@dataclass(frozen=True)
class ExtensionRef:
    """A global named by an extension code (``EXT1/2/4``); never looked up."""

    code: int

    @property
    def dotted_name(self) -> str:
        """A readable stand-in name, ``"<extension N>"``."""
        return f"<extension {self.code}>"


@dataclass(frozen=True, eq=False)
class PersistentRef:
    """A persistent id (e.g. a torch storage tuple), recorded and never resolved.

    For torch files ``pid`` is ``('storage', Global(storage type), key,
    location, numel)`` (the legacy format adds a view-metadata element).
    """

    pid: Any

    @property
    def storage_type(self) -> str | None:
        """The storage class's dotted name for a torch storage id, else None."""
        if isinstance(self.pid, tuple) and len(self.pid) >= 2:
            kind = self.pid[1]
            return getattr(kind, "dotted_name", None)
        return None


@dataclass(eq=False)
class OutOfBandBuffer:
    """A protocol-5 out-of-band buffer (``NEXT_BUFFER``), numbered from 0."""

    index: int
    readonly: bool = False


class Call:
    """An inert record of calling a placeholder: ``func_name(*args, **kwargs)`` + state.

    Attributes:
        func_name: the callable's dotted name (``"torch._utils._rebuild_tensor_v2"``).
        args: positional arguments as loaded.
        kwargs: keyword arguments (``NEWOBJ_EX`` only), else ``{}``.
        kind: the opcode that made it (``reduce``, ``newobj``, ``newobj_ex``,
            ``inst``, ``obj``, ``reconstructor``).
        func: the placeholder that was "called".
        builds: every ``BUILD`` state applied, in order (usually one).
        listitems: items ``APPEND``/``APPENDS``/``ADDITEMS`` added to it.
        dictitems: ``(key, value)`` pairs ``SETITEM``/``SETITEMS`` added to it.
    """

    __slots__ = ("args", "builds", "dictitems", "func", "func_name", "kind", "kwargs",
                 "listitems")

    def __init__(
        self,
        func_name: str,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        state: Any = None,
        *,
        kind: str = "reduce",
        func: Any = None,
    ) -> None:
        self.func_name = func_name
        self.args = args
        self.kwargs = {} if kwargs is None else kwargs
        self.kind = kind
        self.func = func
        self.builds: list[Any] = [] if state is None else [state]
        self.listitems: list[Any] = []
        self.dictitems: list[tuple[Any, Any]] = []

    @property
    def state(self) -> Any:
        """The first ``BUILD`` state (``obj.__dict__`` for most classes), or None."""
        return self.builds[0] if self.builds else None

    @property
    def state_dict(self) -> dict[Any, Any] | None:
        """The state as a dict (``(dict, slots)`` states give the dict), or None."""
        state = self.state
        if isinstance(state, tuple) and len(state) == 2 and isinstance(state[0], dict):
            state = state[0]
        return state if isinstance(state, dict) else None

    @property
    def value(self) -> Any:
        """The enum-like value: the single positional argument, else None.

        ``SchedulerType("linear")`` is pickled as a call of the class on its value,
        so ``Call.value`` gives ``"linear"``.
        """
        if len(self.args) == 1 and not self.kwargs and not self.builds:
            return self.args[0]
        return None

    def __repr__(self) -> str:
        extra = f", state=<{type(self.state).__name__}>" if self.builds else ""
        return f"Call({self.func_name!r}, args=<{len(self.args)}>{extra})"


def _name_of(func: Any) -> str:
    """The dotted name of a "callable" placeholder, or a description of it."""
    name = getattr(func, "dotted_name", None)
    if isinstance(name, str):
        return name
    if isinstance(func, Call):
        return f"{func.func_name}(...)"
    return f"<{type(func).__name__}>"


# --------------------------------------------------------------------------- danger

#: Modules whose every global is dangerous (they run code, touch files, processes
#: or the network, or load further pickles). Matches the module and its submodules.
DANGEROUS_MODULES: frozenset[str] = frozenset({
    "os", "posix", "nt", "subprocess", "_posixsubprocess", "runpy", "importlib", "imp",
    "pty", "socket", "_socket", "shutil", "sys", "webbrowser", "code", "codeop", "pickle",
    "_pickle", "cPickle", "pickletools", "marshal", "ctypes", "_ctypes", "multiprocessing",
    "commands", "popen2", "platform", "pdb", "bdb", "timeit", "trace", "profile", "cProfile",
    "pydoc", "pkgutil", "zipimport", "dill", "cloudpickle", "shelve", "tempfile", "signal",
    "asyncio", "http", "urllib", "urllib2", "urllib3", "httplib", "ftplib", "smtplib",
    "telnetlib", "requests", "aiohttp", "xmlrpc", "socketserver", "ssl", "io", "_io",
    "fcntl", "site", "sysconfig", "distutils", "setuptools", "pip", "linecache", "_thread",
    "thread", "torch.hub", "torch.serialization", "torch.jit",
    "torch.utils.cpp_extension", "numpy.testing", "numpy.f2py", "numpy.distutils",
})

#: Dangerous names in ``builtins`` (and Python 2's ``__builtin__``).
DANGEROUS_BUILTINS: frozenset[str] = frozenset({
    "eval", "exec", "execfile", "compile", "__import__", "getattr", "setattr", "delattr",
    "open", "apply", "input", "raw_input", "breakpoint", "globals", "locals", "vars",
    "reload", "file", "help", "exit", "quit", "__loader__", "__build_class__",
})

#: Other exact names that run code or reach attributes by name.
DANGEROUS_NAMES: frozenset[str] = frozenset({
    "types.FunctionType", "types.CodeType", "types.LambdaType", "types.MethodType",
    "types.ModuleType", "types.BuiltinFunctionType", "types.BuiltinMethodType",
    "operator.attrgetter", "operator.methodcaller", "operator.call", "_operator.attrgetter",
    "_operator.methodcaller", "_operator.call", "functools.reduce", "_functools.reduce",
    "torch.load", "torch.storage._load_from_bytes", "numpy.load", "numpy.lib.npyio.load",
    "numpy.lib._npyio_impl.load", "pandas.read_pickle", "joblib.load",
})

#: Names harmless though their module is listed above.
SAFE_EXCEPTIONS: frozenset[str] = frozenset({
    "io.BytesIO", "_io.BytesIO", "io.StringIO", "_io.StringIO",
})

#: Attribute names that let a dotted name climb to arbitrary objects.
_GADGET_ATTRS: frozenset[str] = frozenset({
    "__globals__", "__builtins__", "__subclasses__", "__getattribute__", "__getattr__",
    "__import__", "__code__", "__dict__", "__class__", "__base__", "__bases__", "__mro__",
    "__reduce__", "__reduce_ex__", "__setattr__", "__delattr__", "__init_subclass__",
    "__loader__", "__spec__", "__self__", "__func__", "__closure__", "func_globals",
})

_BUILTIN_MODULES = frozenset({"builtins", "__builtin__", "__builtins__"})


def danger_reason(dotted_name: str) -> str | None:
    """Why a global name is dangerous to call or import, or None if it is not known to be.

    The name is ``module.qualname``; the module may be any prefix. Names from
    Python 2 pickles (``__builtin__.eval``, ``posix.system``) are covered.
    """
    name = dotted_name.strip()
    if name in SAFE_EXCEPTIONS:
        return None
    parts = name.split(".")
    if any(p in _GADGET_ATTRS for p in parts):
        return "reaches arbitrary attributes through a dunder name"
    if name.startswith("<extension"):
        return None
    if parts[0] in _BUILTIN_MODULES and len(parts) > 1:
        if parts[1] in DANGEROUS_BUILTINS:
            return f"builtin {parts[1]}() runs code or reaches attributes/files by name"
        return None
    for i in range(1, len(parts)):
        prefix = ".".join(parts[:i])
        if prefix in DANGEROUS_MODULES:
            return f"module {prefix} can run commands or code, or touch files or the network"
    if name in DANGEROUS_NAMES:
        return "runs code, loads another pickle or reaches attributes by name"
    return None


def is_dangerous(dotted_name: str) -> bool:
    """Whether a reference to ``dotted_name`` could run code (see :func:`danger_reason`)."""
    return danger_reason(dotted_name) is not None


# --------------------------------------------------------------------------- materialisation


class _Keep(Exception):
    """Raised by a materialiser: keep the placeholder instead."""


def _all(values: Iterable[Any], types: tuple[type, ...]) -> bool:
    return all(isinstance(v, types) for v in values)


def _m_ordered_dict(args: tuple[Any, ...]) -> Any:
    if not args:
        return collections.OrderedDict()
    if len(args) == 1 and isinstance(args[0], (dict, list, tuple)):
        return collections.OrderedDict(args[0])
    raise _Keep


def _m_collection(kind: type) -> Callable[[tuple[Any, ...]], Any]:
    def make(args: tuple[Any, ...]) -> Any:
        if not args:
            return kind()
        if len(args) == 1 and isinstance(args[0], (list, tuple, set, frozenset)):
            return kind(args[0])
        raise _Keep

    return make


def _m_bytes(kind: type) -> Callable[[tuple[Any, ...]], Any]:
    def make(args: tuple[Any, ...]) -> Any:
        if not args:
            return kind()
        if len(args) == 1 and isinstance(args[0], (bytes, bytearray)):
            return kind(args[0])
        if len(args) == 1 and isinstance(args[0], list) and _all(args[0], (int,)):
            return kind(args[0])
        if len(args) == 2 and isinstance(args[0], str) and args[1] in _SAFE_ENCODINGS:
            return kind(args[0], args[1])
        raise _Keep

    return make


_SAFE_ENCODINGS = frozenset({"latin1", "latin-1", "iso-8859-1", "utf-8", "utf8", "ascii"})


def _m_codecs_encode(args: tuple[Any, ...]) -> Any:
    if len(args) == 2 and isinstance(args[0], str) and args[1] in _SAFE_ENCODINGS:
        return args[0].encode(args[1])
    raise _Keep


def _m_numbers(kind: Callable[..., Any], n: int) -> Callable[[tuple[Any, ...]], Any]:
    def make(args: tuple[Any, ...]) -> Any:
        if len(args) <= n and _all(args, (int, float, type(None))):
            return kind(*args)
        if kind is complex and len(args) == 1 and isinstance(args[0], str) and len(args[0]) < 100:
            return complex(args[0])
        raise _Keep

    return make


_DATETIME_ARGS = (int, float, str, bytes, type(None), datetime.timezone, datetime.timedelta)


def _m_datetime(kind: Callable[..., Any]) -> Callable[[tuple[Any, ...]], Any]:
    def make(args: tuple[Any, ...]) -> Any:
        if len(args) <= 8 and _all(args, _DATETIME_ARGS) and not any(
            isinstance(a, (str, bytes)) and len(a) > 64 for a in args
        ):
            return kind(*args)
        raise _Keep

    return make


def _m_decimal(args: tuple[Any, ...]) -> Any:
    if len(args) == 1 and isinstance(args[0], (str, int)) and len(str(args[0])) < 1000:
        return decimal.Decimal(args[0])
    raise _Keep


#: Dotted name -> materialiser; each checks its arguments and builds a plain value.
MATERIALISED: dict[str, Callable[[tuple[Any, ...]], Any]] = {
    "collections.OrderedDict": _m_ordered_dict,
    "builtins.set": _m_collection(set),
    "builtins.frozenset": _m_collection(frozenset),
    "builtins.bytearray": _m_bytes(bytearray),
    "builtins.bytes": _m_bytes(bytes),
    "_codecs.encode": _m_codecs_encode,
    "codecs.encode": _m_codecs_encode,
    "builtins.complex": _m_numbers(complex, 2),
    "builtins.slice": _m_numbers(slice, 3),
    "builtins.range": _m_numbers(range, 3),
    "datetime.datetime": _m_datetime(datetime.datetime),
    "datetime.date": _m_datetime(datetime.date),
    "datetime.time": _m_datetime(datetime.time),
    "datetime.timedelta": _m_datetime(datetime.timedelta),
    "datetime.timezone": _m_datetime(datetime.timezone),
    "decimal.Decimal": _m_decimal,
}


# --------------------------------------------------------------------------- input


class _Input:
    """A bounded, chunked reader over a binary stream."""

    def __init__(self, fh: IO[bytes], max_bytes: int) -> None:
        self._read = fh.read
        self._readline = fh.readline
        self.pos = 0
        self.limit = max_bytes

    def read(self, n: int) -> bytes:
        if n < 0:
            raise UnpickleError(f"negative length {n} at offset {self.pos}")
        if self.pos + n > self.limit:
            raise PickleLimitExceeded(
                f"a length of {n:,} bytes at offset {self.pos:,} goes past the "
                f"{self.limit:,}-byte limit"
            )
        if n <= _CHUNK:
            data = self._read(n)
        else:
            parts: list[bytes] = []
            left = n
            while left:
                part = self._read(min(left, _CHUNK))
                if not part:
                    break
                parts.append(part)
                left -= len(part)
            data = b"".join(parts)
        if len(data) < n:
            raise PickleTruncated(
                f"input ends at offset {self.pos + len(data):,}: {n:,} bytes were declared"
            )
        self.pos += n
        return data

    def readline(self) -> bytes:
        left = self.limit - self.pos
        line = self._readline(left + 1)
        if not line.endswith(b"\n"):
            if len(line) > left:
                raise PickleLimitExceeded(f"a text line at offset {self.pos:,} is too long")
            raise PickleTruncated(f"input ends inside a text line at offset {self.pos:,}")
        self.pos += len(line)
        return line[:-1]


# --------------------------------------------------------------------------- the interpreter

_MARK = object()


class SafeUnpickler:
    """Interpret one pickle from a binary stream without importing or calling anything.

    After :meth:`load`, :attr:`globals` holds every dotted name referenced (in
    order of first appearance), :attr:`persistent_ids` every persistent id, and
    :attr:`mutated_globals` the names a ``BUILD`` tried to set attributes on.
    """

    def __init__(
        self,
        fh: IO[bytes],
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_ops: int = DEFAULT_MAX_OPS,
        max_depth: int = DEFAULT_MAX_DEPTH,
    ) -> None:
        self._in = _Input(fh, max_bytes)
        self.max_ops = max_ops
        self.max_depth = max_depth
        self.globals: dict[str, None] = {}
        self.persistent_ids: list[Any] = []
        self.mutated_globals: dict[str, None] = {}
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
            _check_depth(self._value, self.max_depth)
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
        return ref

    def _call(self, func: Any, args: Any, kwargs: Any = None, kind: str = "reduce") -> Any:
        if not isinstance(func, (Global, ExtensionRef, Call, PersistentRef)):
            raise UnpickleError(f"{kind.upper()} on a {type(func).__name__}, not a global")
        if not isinstance(args, tuple):
            args = tuple(args) if isinstance(args, list) else (args,)
        if kwargs is not None and not isinstance(kwargs, dict):
            raise UnpickleError(f"{kind.upper()} keyword arguments are not a dict")
        name = _name_of(func)
        if kwargs is None and kind in ("reduce", "inst", "obj", "newobj"):
            if name == "copyreg._reconstructor" and len(args) == 3:
                cls, _base, state = args
                return Call(_name_of(cls), () if state is None else (state,),
                            kind="reconstructor", func=cls)
            if name == "copyreg.__newobj__" and args:
                return Call(_name_of(args[0]), args[1:], kind="newobj", func=args[0])
            if name == "copyreg.__newobj_ex__" and len(args) == 3:
                cls, a, kw = args
                if isinstance(a, tuple) and isinstance(kw, dict):
                    return Call(_name_of(cls), a, kw, kind="newobj_ex", func=cls)
            maker = MATERIALISED.get(name)
            if maker is not None and kind in ("reduce", "inst", "obj"):
                try:
                    return maker(args)
                except Exception:  # _Keep, or arguments the type refuses
                    pass
        return Call(name, args, kwargs, kind=kind, func=func)

    def _push(self, value: Any) -> None:
        self.stack.append(value)

    def _int(self, fmt: str, size: int) -> int:
        return struct.unpack(fmt, self._in.read(size))[0]

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
        self._push(self._decode_py2(self._in.read(self._in.read(1)[0])))

    def _op_unicode(self) -> None:
        self._push(str(self._in.readline(), "raw-unicode-escape"))

    def _op_binunicode(self) -> None:
        self._push(str(self._in.read(self._size(self._int("<I", 4))), "utf-8", "surrogatepass"))

    def _op_short_binunicode(self) -> None:
        self._push(str(self._in.read(self._in.read(1)[0]), "utf-8", "surrogatepass"))

    def _op_binunicode8(self) -> None:
        self._push(str(self._in.read(self._size(self._int("<Q", 8))), "utf-8", "surrogatepass"))

    def _op_binbytes(self) -> None:
        self._push(self._in.read(self._size(self._int("<I", 4))))

    def _op_short_binbytes(self) -> None:
        self._push(self._in.read(self._in.read(1)[0]))

    def _op_binbytes8(self) -> None:
        self._push(self._in.read(self._size(self._int("<Q", 8))))

    def _op_bytearray8(self) -> None:
        self._push(bytearray(self._in.read(self._size(self._int("<Q", 8)))))

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
        items = self._pop_mark()
        self._push({items[i]: items[i + 1] for i in range(0, len(items) - 1, 2)})

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
        pairs = [(items[i], items[i + 1]) for i in range(0, len(items) - 1, 2)]
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
            # Only the instance's own __dict__ is written: no attribute hooks run.
            inst.__dict__.update({str(k): v for k, v in state.items()})
        else:
            raise UnpickleError(f"BUILD on a {type(inst).__name__}")

    def _op_persid(self) -> None:
        self._persistent(self._in.readline().decode("ascii"))

    def _op_binpersid(self) -> None:
        self._persistent(self.stack.pop())

    def _persistent(self, pid: Any) -> None:
        self.persistent_ids.append(pid)
        self._push(PersistentRef(pid))


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


# --------------------------------------------------------------------------- walking


def _children(obj: Any) -> Iterable[Any] | None:
    """The values directly inside ``obj``, or None for a leaf."""
    if isinstance(obj, (list, tuple, set, frozenset)):
        return obj
    if isinstance(obj, dict):
        extra = obj.__dict__.values() if isinstance(obj, collections.OrderedDict) else ()
        return [*obj.keys(), *obj.values(), *extra]
    if isinstance(obj, Call):
        return [obj.func, *obj.args, *obj.kwargs.values(), *obj.builds, *obj.listitems,
                *(x for pair in obj.dictitems for x in pair)]
    if isinstance(obj, PersistentRef):
        return (obj.pid,)
    return None


def walk(obj: Any, *, max_depth: int | None = None) -> Iterator[tuple[Any, int]]:
    """Yield ``(value, depth)`` for every value reachable from ``obj``, each container once.

    Iterative (no recursion), cycle-safe. Raises :class:`PickleLimitExceeded` when
    ``max_depth`` is given and a value lies deeper.
    """
    stack: list[tuple[Any, int]] = [(obj, 0)]
    seen: set[int] = set()
    while stack:
        value, depth = stack.pop()
        if max_depth is not None and depth > max_depth:
            raise PickleLimitExceeded(f"structure nested deeper than {max_depth} levels")
        children = _children(value)
        if children is not None:
            if id(value) in seen:
                continue
            seen.add(id(value))
            stack.extend((child, depth + 1) for child in children)
        yield value, depth


_LEAF_TYPES = frozenset({str, int, float, bool, bytes, bytearray, complex, type(None),
                         Global, ExtensionRef, OutOfBandBuffer})


def _check_depth(obj: Any, max_depth: int) -> None:
    """Raise :class:`PickleLimitExceeded` if containers nest deeper than ``max_depth``."""
    stack: list[tuple[Any, int]] = [(obj, 0)]
    seen: set[int] = set()
    leaves = _LEAF_TYPES
    while stack:
        value, depth = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if depth > max_depth:
            raise PickleLimitExceeded(f"structure nested deeper than {max_depth} levels")
        children = _children(value)
        if children:
            stack.extend((c, depth + 1) for c in children if type(c) not in leaves)


def referenced_globals(obj: Any) -> set[str]:
    """Dotted names of every global placeholder reachable from a loaded object."""
    names: set[str] = set()
    for value, _ in walk(obj):
        if isinstance(value, (Global, ExtensionRef)):
            names.add(value.dotted_name)
        elif isinstance(value, Call):
            names.add(value.func_name)
    return names


# --------------------------------------------------------------------------- entry points


@dataclass(frozen=True)
class Unpickled:
    """One object read safely, with what its pickle referenced.

    Attributes:
        obj: the object (plain values and placeholders).
        globals: every dotted name the pickle referenced, in order of appearance.
        mutated_globals: names a ``BUILD`` tried to set attributes on (an attack
            pattern in itself).
        persistent_ids: every persistent id, in order (torch: one per storage).
        container: ``"pickle"``, ``"torch_zip"`` or ``"torch_legacy"``.
        member: the zip member read (``"archive/data.pkl"``), else ``""``.
        meta: container details (legacy: ``protocol_version``, ``sys_info``;
            zip: ``archive``, ``salvaged`` when read from a torn zip).
    """

    obj: Any
    globals: tuple[str, ...] = ()
    mutated_globals: tuple[str, ...] = ()
    persistent_ids: tuple[Any, ...] = ()
    container: str = "pickle"
    member: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def dangerous(self) -> tuple[str, ...]:
        """Referenced names that are dangerous, plus globals a ``BUILD`` tried to mutate."""
        bad = [n for n in self.globals if is_dangerous(n)]
        return tuple(dict.fromkeys([*bad, *self.mutated_globals]))


Source = bytes | bytearray | memoryview | IO[bytes] | str | os.PathLike


def _as_stream(source: Any) -> tuple[IO[bytes], bool]:
    """A binary stream over ``source`` and whether the caller must close it."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return io.BytesIO(bytes(source)), True
    if isinstance(source, (str, os.PathLike)):
        try:
            return open(source, "rb"), True
        except OSError as exc:
            raise UnpickleError(f"cannot open {os.fspath(source)}: {exc.strerror}") from exc
    if hasattr(source, "read") and hasattr(source, "readline"):
        return source, False
    raise TypeError(f"expected bytes, a path or a binary file, not {type(source).__name__}")


def _scan_stream(fh: IO[bytes], limits: dict[str, int], **extra: Any) -> Unpickled:
    unpickler = SafeUnpickler(fh, **limits)
    obj = unpickler.load()
    return Unpickled(obj, tuple(unpickler.globals), tuple(unpickler.mutated_globals),
                     tuple(unpickler.persistent_ids), **extra)


def scan(
    source: Source,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_ops: int = DEFAULT_MAX_OPS,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> Unpickled:
    """Read one pickle safely; return the object with the globals it referenced.

    ``source`` is bytes, a binary file object (read from its current position up
    to the pickle's ``STOP``) or a path.

    Raises:
        UnpickleError: the input is malformed, truncated or over a limit.
    """
    fh, close = _as_stream(source)
    try:
        return _scan_stream(fh, {"max_bytes": max_bytes, "max_ops": max_ops,
                                 "max_depth": max_depth})
    finally:
        if close:
            fh.close()


def load(
    source: Source,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_ops: int = DEFAULT_MAX_OPS,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> Any:
    """Read one pickle safely and return the object (see :func:`scan`)."""
    return scan(source, max_bytes=max_bytes, max_ops=max_ops, max_depth=max_depth).obj


def loads(data: bytes | bytearray | memoryview, **limits: int) -> Any:
    """Read one pickle from bytes safely and return the object."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"loads() needs bytes, not {type(data).__name__}")
    return load(data, **limits)


# --------------------------------------------------------------------------- torch files

_ZIP_MAGIC = b"PK\x03\x04"
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")


def _pick_data_pkl(names: list[str]) -> str | None:
    candidates = [n for n in names if n == "data.pkl" or n.endswith("/data.pkl")]
    return min(candidates, key=lambda n: (n.count("/"), n)) if candidates else None


def _torch_zip(fh: IO[bytes], limits: dict[str, int], start: int) -> Unpickled:
    try:
        archive = zipfile.ZipFile(fh)
    except Exception:  # BadZipFile, OSError, struct errors of a torn directory...
        try:
            return _torn_zip(fh, limits, start)
        except (OSError, ValueError, struct.error) as exc:
            if isinstance(exc, UnpickleError):
                raise
            raise UnpickleError(f"cannot read the torn zip file: {exc}") from exc
    with archive:
        member = _pick_data_pkl(archive.namelist())
        if member is None:
            raise UnpickleError("zip file without a data.pkl: not a torch file")
        try:
            with archive.open(member) as inner:
                prefix = member.rsplit("/", 1)[0] if "/" in member else ""
                return _scan_stream(inner, limits, container="torch_zip", member=member,
                                    meta={"archive": prefix})
        except UnpickleError:
            raise
        except Exception as exc:  # encrypted (RuntimeError), bad deflate (zlib.error)...
            raise UnpickleError(f"cannot read {member} from the zip: {exc}") from exc


def _torn_zip(fh: IO[bytes], limits: dict[str, int], start: int) -> Unpickled:
    """Read data.pkl through the first local header of a zip whose directory is lost."""
    fh.seek(start)
    header = fh.read(_LOCAL_HEADER.size)
    if len(header) < _LOCAL_HEADER.size:
        raise PickleTruncated("zip file shorter than one local header")
    sig, _ver, _flags, method, _t, _d, _crc, _csize, _usize, nlen, xlen = _LOCAL_HEADER.unpack(
        header
    )
    name = fh.read(nlen).decode("utf-8", "replace")
    if sig != _ZIP_MAGIC or not (name == "data.pkl" or name.endswith("/data.pkl")):
        raise UnpickleError("zip file with no central directory and no leading data.pkl")
    if method != 0:
        raise UnpickleError("torn zip file whose data.pkl is compressed")
    fh.read(xlen)
    prefix = name.rsplit("/", 1)[0] if "/" in name else ""
    return _scan_stream(fh, limits, container="torch_zip", member=name,
                        meta={"archive": prefix, "salvaged": True})


def _torch_legacy_or_pickle(fh: IO[bytes], limits: dict[str, int]) -> Unpickled:
    first = _scan_stream(fh, limits)
    if first.obj != TORCH_LEGACY_MAGIC or isinstance(first.obj, bool):
        return first
    version = _scan_stream(fh, limits).obj
    sys_info = _scan_stream(fh, limits)
    main = _scan_stream(fh, limits)
    names = tuple(dict.fromkeys([*sys_info.globals, *main.globals]))
    return Unpickled(main.obj, names, main.mutated_globals, main.persistent_ids,
                     container="torch_legacy",
                     meta={"protocol_version": version, "sys_info": sys_info.obj})


def load_torch(
    source: Source,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_ops: int = DEFAULT_MAX_OPS,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> Unpickled:
    """Read the object of a ``torch.save`` file (zip or legacy) or a plain pickle, safely.

    Storages are recorded as :class:`PersistentRef` placeholders; their bytes are
    never read. ``Unpickled.container`` says which format was found.

    Raises:
        UnpickleError: not a pickle, a torch file with no ``data.pkl``, or any
            malformed, truncated or oversized pickle.
    """
    limits = {"max_bytes": max_bytes, "max_ops": max_ops, "max_depth": max_depth}
    fh, close = _as_stream(source)
    try:
        try:
            start = fh.tell()
            magic = fh.read(4)
            fh.seek(start)
        except (OSError, ValueError) as exc:
            raise UnpickleError(f"cannot read the input: {exc}") from exc
        if not magic:
            raise PickleTruncated("empty input")
        if magic[:2] == b"PK" and magic[2:4] in (b"\x03\x04", b"\x05\x06", b"\x07\x08"):
            return _torch_zip(fh, limits, start)
        return _torch_legacy_or_pickle(fh, limits)
    finally:
        if close:
            fh.close()
