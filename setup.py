"""Build the Cython extension(s); all metadata lives in pyproject.toml. How they are compiled
(profile-guided by default, plain with SQ_PGO=0, the flags) is pgo_build.py's."""
import os
import sys

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))   # pgo_build.py, beside this file
import pgo_build  # noqa: E402

def extension(name):
    return Extension(
        f"sq.{name.replace('/', '.')}",
        [f"sq/{name}.pyx"],
        include_dirs=[numpy.get_include(), "sq/engine/_src"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )


# lower/_bytecode: the bytecode contract's enums for Python (sq/lower/lowering.py); the engine cimports its .pxd;
# engine/_random: the ChaCha12 streams and distributions (C header + a small Python class);
# _engine: the event loop (its concerns are sq/engine/*.pxi), which cimports _random's C functions;
# results/_stats: the report's order-sensitive sums (Welford, batch means) at C speed;
# results/_json_text: a report's JSON text in one C pass (it cimports _number_text's writer);
# traces/_scan: the trace files' scanners (CSV and JSON lines → columns);
# _support/_number_text: number_format's positional text and a report's JSON members in C.
extensions = [extension("_support/_number_text"), extension("lower/_bytecode"), extension("engine/_random"), extension("_engine"),
              extension("results/_stats"), extension("results/_json_text"),
              extension("traces/_scan")]

setup(
    cmdclass={"build_ext": pgo_build.build_ext},
    ext_modules=cythonize(
        extensions,
        compiler_directives={
            "language_level": 3,
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
    ),
)
