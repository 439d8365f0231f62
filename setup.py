"""Build hook for the one optional compiled module; the metadata lives in pyproject.toml.

``autopsy/readers/ranklogs/_shapematch.c`` reads the lines of learned shapes about ten times
faster than the regular expression it stands in for. It is optional: where it cannot be
compiled (no C compiler), the install goes on and autopsy uses the pure-Python path, which
gives the same results.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("autopsy.readers.ranklogs._shapematch",
                             sources=["autopsy/readers/ranklogs/_shapematch.c"],
                             optional=True)])
