"""Which global names a pickle may reference: the denylist, the allowlist and the classifier.

The restricted unpickler never imports or calls anything; this module decides what a name
would do under ``torch.load(weights_only=False)``. :func:`classify_global` gives one of

* ``dangerous``: a name known to run code, touch files, processes or the network, or to
  reach other objects by attribute (:func:`danger_reason`);
* ``allowed``: a name real checkpoints hold (:data:`ALLOWED_NAMES`, the patterns of
  :data:`ALLOWED_PATTERNS`, and the classes of the training libraries in
  :data:`TRAINING_PACKAGES`);
* ``unverified``: anything else. A denylist cannot be complete (the standard library alone
  has functions that run commands under harmless-looking names, such as
  ``uuid._get_command_stdout``), so a name that is on neither list is never taken for safe:
  the checkpoint audit reports it (CKPT031), as ``torch.load(weights_only=True)`` would
  refuse it.
"""

from __future__ import annotations

import re

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
    # torch.distributed.checkpoint's .metadata names tensor layouts through it: a lookup of
    # a torch.layout by its name in a fixed table, nothing else.
    "torch.serialization._get_layout",
    # a named tuple of strings (platform.uname()) that some runs save with their metadata
    "platform.uname_result",
})

#: Exact names real checkpoints hold (torch, numpy and the standard library's value types):
#: building them makes a value and runs nothing else.
ALLOWED_NAMES: frozenset[str] = frozenset({
    *SAFE_EXCEPTIONS,
    "collections.OrderedDict", "collections.defaultdict", "collections.deque",
    "collections.Counter",
    *(f"builtins.{n}" for n in ("set", "frozenset", "bytearray", "bytes", "complex", "slice",
                                "range", "object", "list", "dict", "tuple", "int", "float",
                                "str", "bool", "NoneType", "Ellipsis", "NotImplemented")),
    *(f"__builtin__.{n}" for n in ("set", "frozenset", "bytearray", "complex", "slice",
                                   "object", "list", "dict", "tuple", "int", "float", "long",
                                   "str", "unicode", "bool")),
    "_codecs.encode", "codecs.encode", "copyreg._reconstructor", "copy_reg._reconstructor",
    "copyreg.__newobj__", "copyreg.__newobj_ex__",
    "datetime.datetime", "datetime.date", "datetime.time", "datetime.timedelta",
    "datetime.timezone", "decimal.Decimal", "fractions.Fraction", "uuid.UUID",
    "argparse.Namespace", "typing.Any", "enum.Enum",
    "pathlib.Path", "pathlib.PosixPath", "pathlib.WindowsPath", "pathlib.PurePath",
    "pathlib.PurePosixPath", "pathlib.PureWindowsPath",
    "torch.Size", "torch.device", "torch.dtype", "torch.layout", "torch.memory_format",
    "torch.Tensor", "torch.nn.parameter.Parameter", "torch.nn.parameter.Buffer",
    "torch.nn.parameter.UninitializedParameter", "torch.torch_version.TorchVersion",
    "torch._tensor._rebuild_from_type", "torch._tensor._rebuild_from_type_v2",
    "torch.storage.UntypedStorage", "torch.storage.TypedStorage", "torch.storage._TypedStorage",
    "torch.strided", "torch.sparse_coo", "torch.sparse_csr", "torch._mkldnn",
    "torch.contiguous_format", "torch.channels_last", "torch.preserve_format",
    "numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct",
    "numpy.core.multiarray.scalar", "numpy._core.multiarray.scalar",
    "numpy.core.numeric._frombuffer", "numpy._core.numeric._frombuffer",
    "numpy.ndarray", "numpy.dtype", "numpy.random.__RandomState_ctor",
    "numpy.random._pickle.__randomstate_ctor", "numpy.random._pickle.__bit_generator_ctor",
    "numpy.random._pickle.__generator_ctor",
})

#: Patterns of allowed names: torch's tensor and storage rebuilds, its dtypes, numpy's dtype
#: classes and the (CamelCase) classes of torch's own modules (a whole model saved with
#: ``torch.save(model)`` names ``torch.nn.modules.linear.Linear``; DCP's ``.metadata``
#: names ``torch.distributed.checkpoint.metadata.TensorStorageMetadata``).
ALLOWED_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"^torch\._utils\._rebuild_\w+$"),
    re.compile(r"^torch\.(?:cuda\.)?\w*Storage$"),
    re.compile(r"^torch\.(?:float\w*|double|half|bfloat16|u?int\d*|long|short|bool|complex\d+|"
               r"cfloat|cdouble|chalf|q?u?int\d+x?\d*|bits\w+)$"),
    re.compile(r"^numpy\.dtypes\.\w+DType$"),
    re.compile(r"^torch(?:\.[a-z_]\w*)+\._?[A-Z]\w*$"),
)

#: Libraries whose classes training checkpoints pickle (``TrainingArguments`` and its enums,
#: accelerate's and DeepSpeed's config dataclasses, Lightning's hyper-parameter containers,
#: omegaconf's ``DictConfig``...): a CamelCase name (a class, by the naming convention these
#: libraries follow) in one of them is allowed; a function of theirs is not.
TRAINING_PACKAGES: frozenset[str] = frozenset({
    "transformers", "accelerate", "peft", "trl", "lightning", "pytorch_lightning",
    "lightning_fabric", "torchmetrics", "deepspeed", "omegaconf", "torchvision", "timm",
    "megatron", "apex", "datasets", "tokenizers", "diffusers", "sentence_transformers",
    "ultralytics", "mmengine", "detectron2", "fairseq", "nemo", "composer", "torchtune",
})
_CLASS_NAME = re.compile(r"^[A-Z][A-Za-z0-9_]*$")

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


def attribute_path_reason(module: str, name: str) -> str | None:
    """Why a global whose name is a dotted attribute path (``STACK_GLOBAL('torch',
    'os.system')``: the ``os`` module reached as an attribute of ``torch``) is dangerous,
    or None when the path meets no dangerous module or attribute."""
    if "." not in name:
        return None
    for i, part in enumerate(name.split(".")):
        if part in _GADGET_ATTRS:
            return "reaches arbitrary attributes through a dunder name"
        if part in DANGEROUS_MODULES or part in _BUILTIN_MODULES or (
                i == len(name.split(".")) - 1 and part in DANGEROUS_BUILTINS):
            return (f"reaches {part} through attributes of {module} "
                    f"({module}.{name}), a way round a list of module names")
    return None


#: The three answers of :func:`classify_global`.
DANGEROUS, ALLOWED, UNVERIFIED = "dangerous", "allowed", "unverified"


def classify_global(dotted_name: str, *, attribute_path: bool = False) -> tuple[str, str]:
    """``(level, why)`` for one referenced global (see the module docstring).

    ``attribute_path``: the pickle named it as a module and a *dotted* qualname
    (``STACK_GLOBAL('torch', 'os.system')``), which is never allowed: a lookup through
    attributes can reach any module the named one imports.
    """
    why = danger_reason(dotted_name)
    if why is not None:
        return DANGEROUS, why
    if attribute_path:
        return UNVERIFIED, "named as a dotted attribute path, which can reach other modules"
    parts = dotted_name.split(".")
    if any(part in DANGEROUS_MODULES for part in parts[1:]):  # torch.multiprocessing.Process
        return UNVERIFIED, (f"{dotted_name} lives in a module that runs processes, code or "
                            "I/O; whether building it runs any cannot be checked")
    if dotted_name in ALLOWED_NAMES or any(p.match(dotted_name) for p in ALLOWED_PATTERNS):
        return ALLOWED, ""
    if parts[0] in TRAINING_PACKAGES and len(parts) > 1 and _CLASS_NAME.match(parts[-1]):
        return ALLOWED, ""
    return UNVERIFIED, ("not among the globals real checkpoints hold; whether it runs code "
                        "when unpickled cannot be checked without importing it")
