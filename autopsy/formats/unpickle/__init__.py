"""A restricted unpickler that never imports or calls anything named by the file.

Safety model
------------
This is an interpreter of the pickle opcodes (protocols 0 to 5) written from
scratch (:mod:`.interpreter`); it does not use :class:`pickle.Unpickler` at all,
so there is no hook that could be forgotten. It builds only plain Python values
(``None``, bools, ints, floats, str, bytes, bytearray, tuples, lists, dicts, sets,
frozensets) and inert placeholders (:mod:`.placeholders`):

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
(:mod:`.safe_values`): ``collections.OrderedDict``, ``builtins.set``,
``frozenset``, ``bytearray``, ``bytes``, ``complex``, ``slice``, ``range``,
``_codecs.encode`` (how protocol 2 spells bytes), ``datetime.*`` and
``decimal.Decimal``. ``copyreg._reconstructor`` / ``__newobj__`` /
``__newobj_ex__`` (how protocols 0-2 spell "make an instance of class X") become
a :class:`Call` named for X. Enum members stay placeholders; ``Call.value``
gives their value. Anything whose arguments do not fit stays a placeholder.

The names a pickle references are collected while it is read (including names
that do not survive into the result); :func:`is_dangerous` (:mod:`.danger`)
classifies them (``os.system``, ``subprocess.*``, ``builtins.eval`` ...), so a
hostile file is *reported*, never run.

Resources are bounded (:mod:`.limits`): the bytes read (``max_bytes``), the
opcodes executed (``max_ops``, which bounds the objects made), the nesting of
marks and of the result (``max_depth``), and every declared length is checked
against what is left before anything is allocated. Every failure is an
:class:`UnpickleError` (or one of its subclasses, :mod:`.errors`); no other
exception escapes :func:`load`.

Torch files (:mod:`.torchfile`): :func:`load_torch` reads the
``<archive>/data.pkl`` of a torch zip file (also from a zip with a torn tail,
through its first local header) and the legacy non-zip format (magic number,
protocol version, sys_info, then the object, then raw storages that are not read).
"""

from __future__ import annotations

from autopsy.formats.unpickle.danger import danger_reason, is_dangerous
from autopsy.formats.unpickle.errors import PickleLimitExceeded, PickleTruncated, UnpickleError
from autopsy.formats.unpickle.interpreter import SafeUnpickler
from autopsy.formats.unpickle.limits import DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH, DEFAULT_MAX_OPS
from autopsy.formats.unpickle.loader import Unpickled, load, loads, scan
from autopsy.formats.unpickle.placeholders import (
    Call,
    ExtensionRef,
    Global,
    OutOfBandBuffer,
    PersistentRef,
    referenced_globals,
    walk,
)
from autopsy.formats.unpickle.plain import MAX_PLAIN_NODES, PlainStatus, to_plain
from autopsy.formats.unpickle.torchfile import load_torch

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_OPS",
    "MAX_PLAIN_NODES",
    "Call",
    "ExtensionRef",
    "Global",
    "OutOfBandBuffer",
    "PersistentRef",
    "PickleLimitExceeded",
    "PickleTruncated",
    "PlainStatus",
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
    "to_plain",
    "walk",
]
