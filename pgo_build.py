"""How setup.py compiles sq's extensions: profile-guided (gcc's -fprofile-generate, a training run,
-fprofile-use) by default, plain with `SQ_PGO=0`.

Why: the event loop's branches go one way or the other by the program and its data; a profile tells gcc
which way, so it lays the hot paths out straight and the cold ones away from them (issue 27's eleventh
round in benchmarks/README.md: the step-engine rows take 5-10 % less CPU). Exact all the same: without
-ffast-math gcc keeps IEEE semantics under -fprofile-use, and -ffp-contract=off stays.

The training runs sq/bench/rows.py's rows, those benchmarks/callgrind_rows.py counts (the bench's models
at horizons of a second or less, the week's replicas behind a choose router, a sweep of short runs, each
report's JSON text); they live in the package so that a build from an sdist trains too. They run with
the instrumented extensions, in a child process, from a copy of the package in the build's temporary
folder; the profiles stay there (a .gcda file is tied to its compiler and its generated C). With
-fprofile-partial-training the code the training does not reach stays optimised as usual, not for size.
A compiler that is not gcc, or a training that fails, gives the plain build with one line saying so:
never a failed install. `SQ_PGO=0` gives the plain, incremental build in one pass (development builds,
tests/mutations/run.py).
"""
import os
import re
import shutil
import subprocess
import sys
import time

from setuptools.command.build_ext import build_ext as _build_ext
from setuptools.errors import CompileError

# -ffp-contract=off: a fused multiply-add would round differently from pyserq.
FLAGS = ["-O3", "-ffp-contract=off"]
HERE = os.path.dirname(os.path.abspath(__file__))
TRAINING = """
import sys
from pathlib import Path
sys.path[:0] = [{tree!r}]
from sq.bench import rows
for row in rows.ALL:
    rows.run(row, Path({tree!r}))
"""


def undefined_attributed(c_text):
    """The Cython-made functions (`__pyx_…` names) that the verbatim C of a `cdef extern from *` block
    declares with an attribute (always_inline, noinline, optimize) but the generated C does not define:
    [(name, attributes)]. gcc takes such a declaration for another function's, never defined, and
    only warns (one line among a build's output), so a rename or a Cython that spells the name
    otherwise would drop the attribute unseen. Cython writes each definition on one line from
    column 0: `static … name(…) {`."""
    defined = set(re.findall(r"^static [^\n;]*?\b(__pyx_\w+)\([^\n;]*\{$", c_text, re.M))
    missing = {}
    for attribute in re.finditer(r"__attribute__\(\(", c_text):
        start = max(c_text.rfind(c, 0, attribute.start()) for c in ";{}") + 1
        declaration = c_text[start:c_text.find(";", attribute.start())]
        name = re.search(r"\b(__pyx_\w+)\s*\(", declaration)
        if "{" not in declaration and "}" not in declaration and name and name.group(1) not in defined:
            missing[name.group(1)] = " ".join(re.findall(r"__attribute__\(\([^;]*?\)\)", declaration))
    return list(missing.items())   # (Cython may echo a declaration in a comment too: one entry a name)


class build_ext(_build_ext):
    def build_extensions(self):
        self.check_attributed()
        profiles = os.path.join(os.path.abspath(self.build_temp), "pgo")
        why_plain = self.why_plain()
        if why_plain is None:
            if self.up_to_date(profiles):
                return
            try:
                return self.profile_guided(profiles)
            except Exception as e:   # noqa: BLE001 — whatever failed, the plain build is still a build
                why_plain = f"the profile-guided build failed: {(str(e).strip().splitlines() or [type(e).__name__])[-1]}"
                self.force = True      # every extension again: none may keep the instrumented code
        if why_plain:
            print(f"sq: plain build, not profile-guided ({why_plain})", file=sys.stderr)
        self.compile_all([])

    def check_attributed(self):
        """Fails the build (profile-guided or plain) on an attribute declared for a function Cython does not define."""
        for ext in self.extensions:
            for source in (f for f in ext.sources if f.endswith(".c")):
                with open(source, encoding="utf-8") as f:
                    missing = undefined_attributed(f.read())
                if missing:
                    raise CompileError("; ".join(
                        f"{source} declares {name} with {attributes}, but Cython defines no function of that name "
                        f"(renamed, or another Cython's spelling): fix the `cdef extern from *` block that declares it"
                        for name, attributes in missing))

    def why_plain(self):
        """Why this build is plain ("" when SQ_PGO=0 asks for it), or None for a profile-guided one."""
        if os.environ.get("SQ_PGO", "1") == "0":
            return ""
        compiler = getattr(self.compiler, "compiler_so", None)
        try:   # the compiler's predefined macros: clang and Intel's define __GNUC__ too
            macros = subprocess.run([compiler[0], "-dM", "-E", "-"], input="", capture_output=True, text=True).stdout
        except (OSError, TypeError):
            macros = ""
        gcc = "__GNUC__" in macros and "__clang__" not in macros and "__INTEL_COMPILER" not in macros
        return None if gcc else f"{compiler and compiler[0]} is not gcc"

    def profile_guided(self, profiles):
        shutil.rmtree(profiles, ignore_errors=True)
        self.force = True
        self.compile_all([f"-fprofile-generate={profiles}"])
        started = time.perf_counter()
        self.train(os.path.join(profiles, "tree"))
        print(f"sq: profile-guided build, trained on sq/bench/rows.py's rows in {time.perf_counter() - started:.0f} s",
              file=sys.stderr)
        self.compile_all([f"-fprofile-use={profiles}", "-fprofile-partial-training", "-Wno-missing-profile"])
        open(os.path.join(profiles, "built"), "w").close()

    def compile_all(self, flags):
        for ext in self.extensions:
            ext.extra_compile_args = FLAGS + flags
            ext.extra_link_args = flags
        super().build_extensions()

    def up_to_date(self, profiles):
        """Whether the last profile-guided build is still what is built: no source newer, no extension
        built since (a plain build)."""
        stamp = os.path.join(profiles, "built")
        if self.force or not os.path.exists(stamp):
            return False
        built = os.path.getmtime(stamp)
        files = [f for ext in self.extensions for f in ext.sources + list(ext.depends)]
        outputs = [self.get_ext_fullpath(ext.name) for ext in self.extensions]
        return (all(os.path.exists(f) and os.path.getmtime(f) <= built for f in outputs)
                and all(os.path.getmtime(f) <= built for f in files))

    def train(self, tree):
        """Runs the training in a child process on a copy of the package holding the instrumented extensions."""
        shutil.copytree(os.path.join(HERE, "sq"), os.path.join(tree, "sq"),
                        ignore=shutil.ignore_patterns("*.c", "*.so", "*.pyd", "__pycache__"))
        for ext in self.extensions:
            name = self.get_ext_filename(self.get_ext_fullname(ext.name))
            shutil.copy2(self.get_ext_fullpath(ext.name), os.path.join(tree, name))
        code = TRAINING.format(tree=tree)
        # PYTHONHASHSEED=0: the same training, so the same profile and the same build, every time
        done = subprocess.run([sys.executable, "-c", code], cwd=tree, capture_output=True, text=True,
                              env={**os.environ, "PYTHONHASHSEED": "0"})
        shutil.rmtree(tree)
        if done.returncode != 0:
            raise RuntimeError(f"the training run: {(done.stderr.strip().splitlines() or [done.returncode])[-1]}")
