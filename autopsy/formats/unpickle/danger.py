"""Which global names are dangerous to import or call: the lists and the classifier.

A pickle that references one of these is *reported*; the restricted unpickler
never imports or calls anything, dangerous or not.
"""

from __future__ import annotations

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
