"""The build fails, saying which, when a `cdef extern from *` block gives an attribute (always_inline,
noinline, optimize) to a Cython-made function the generated C does not define: gcc would take the
declaration for another function's and drop the attribute without a word (pgo_build.py)."""
import subprocess
import sys
from pathlib import Path

import pytest
from setuptools import Distribution, Extension

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
import pgo_build  # noqa: E402

# `twice` is what Cython names __pyx_f_5probe_twice in a module `probe`, as the engine's blocks name
# theirs (__pyx_f_2sq_7_engine_replica_quiet)
PROBE = '''
cdef extern from *:
    """
    static inline __attribute__((always_inline)) int __pyx_f_5probe_twice(int);
    """

cdef inline int twice(int x) noexcept nogil:
    return 2 * x

def call(int x):
    return twice(x)
'''
DECLARED = "__attribute__((always_inline)) int __pyx_f_5probe_twice(int);"


@pytest.fixture(scope="module")
def probe_c(tmp_path_factory):
    """The C this Cython generates for PROBE."""
    pyx = tmp_path_factory.mktemp("probe") / "probe.pyx"
    pyx.write_text(PROBE)
    subprocess.run([sys.executable, "-m", "cython", "-3", str(pyx)], check=True, capture_output=True)
    return pyx.with_suffix(".c").read_text()


def check(folder, c_text):
    """build_ext's check on one extension's generated C."""
    (folder / "probe.c").write_text(c_text)
    command = pgo_build.build_ext(Distribution())
    command.extensions = [Extension("probe", [str(folder / "probe.c")])]
    command.check_attributed()


def test_an_attribute_on_a_function_cython_defines_builds(tmp_path, probe_c):
    assert DECLARED in probe_c
    check(tmp_path, probe_c)


def test_an_attribute_on_a_name_cython_does_not_define_fails_the_build(tmp_path, probe_c):
    renamed = probe_c.replace(DECLARED, DECLARED.replace("twice", "thrice"))   # the declaration left behind
    with pytest.raises(pgo_build.CompileError, match=r"probe\.c declares __pyx_f_5probe_thrice with "
                                                     r"__attribute__\(\(always_inline\)\), but Cython defines no"):
        check(tmp_path, renamed)
