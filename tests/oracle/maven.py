"""Build tests/java (Apache Kafka pinned in its pom.xml, plus our Java test programs) and give its classpath.

:func:`build` runs ``mvn compile`` in tests/java when the project changed since the last build, and
returns what ``java -cp`` needs: ``tests/java/target/classes`` followed by the runtime classpath Maven
wrote to ``target/classpath.txt`` (jars in Maven's local repository, ``~/.m2`` unless
``TIDELOG_MAVEN_ARGS`` says otherwise). The project's fingerprint (pom, sources, extra Maven
arguments) is kept in ``target/``; a build whose fingerprint matches and whose jars all exist is
reused without starting Maven. An exclusive ``flock`` on ``target/build.lock`` makes concurrent
callers (pytest-xdist workers, two sessions) build once and share the result.

``TIDELOG_MAVEN_ARGS`` adds arguments to every ``mvn`` run, e.g. ``-o`` (offline) or
``-Dmaven.repo.local=/tmp/m2-empty`` (to time a download into an empty local repository).

Other Maven projects of the test suite build the same way: ``build(project)`` (tests/tubemq/java, the
TubeMQ Java client, keeps its own dependencies apart from Kafka's).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

from tests import toolchain

PROJECT = Path(__file__).resolve().parent.parent / "java"
TARGET = PROJECT / "target"
CLASSES = TARGET / "classes"
CLASSPATH_FILE = TARGET / "classpath.txt"
FINGERPRINT_FILE = TARGET / "tidelog-fingerprint"
LOCK_FILE = TARGET / "build.lock"
#: The files of a project's target/ directory that :func:`build` uses (names as above).
_CLASSES, _CLASSPATH, _FINGERPRINT, _LOCK = "classes", "classpath.txt", "tidelog-fingerprint", "build.lock"
ARGS_ENV = "TIDELOG_MAVEN_ARGS"
BUILD_TIMEOUT_S = 1200
MIN_JAVA = 17  # Kafka 4.x brokers and tools need Java 17


class BuildError(RuntimeError):
    """``mvn`` failed; the message ends with the tail of its output."""


def java_version() -> int | None:
    """The feature version of ``java`` on PATH (17 for 17.0.15), or None without a usable java."""
    if shutil.which("java") is None:
        return None
    out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=60)
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if m is None:
        return None
    major = int(m.group(1))
    return int(m.group(2)) if major == 1 and m.group(2) else major


def require_toolchain() -> None:
    """Skip the caller (fail under TIDELOG_REQUIRE_TOOLCHAINS=1) without java >= 17 and mvn."""
    toolchain.require_command("java+maven", "java", "mvn")
    version = java_version()
    toolchain.require("java+maven", version is not None and version >= MIN_JAVA,
                      f"Apache Kafka 4.x needs Java {MIN_JAVA}+, `java -version` says {version}")


def extra_args() -> list[str]:
    return shlex.split(os.environ.get(ARGS_ENV, ""))


def fingerprint(project: Path = PROJECT) -> str:
    """A digest of everything the build depends on: pom, sources and extra Maven arguments."""
    digest = hashlib.sha256()
    files = [project / "pom.xml", *sorted(p for p in (project / "src").rglob("*") if p.is_file())]
    for path in files:
        digest.update(str(path.relative_to(project)).encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(" ".join(extra_args()).encode())
    return digest.hexdigest()


def _classpath(target: Path) -> str | None:
    """The saved classpath if every entry still exists (a wiped ~/.m2 means building again)."""
    classes, classpath_file = target / _CLASSES, target / _CLASSPATH
    if not classpath_file.exists() or not classes.is_dir():
        return None
    jars = classpath_file.read_text().strip().split(os.pathsep)
    if not all(Path(j).exists() for j in jars):
        return None
    return os.pathsep.join([str(classes), *jars])


def build(project: Path = PROJECT) -> str:
    """Compile ``project`` (tests/java by default) if it changed (once across processes) and return its
    ``java -cp`` classpath."""
    target = project / "target"
    target.mkdir(exist_ok=True)
    fingerprint_file = target / _FINGERPRINT
    with (target / _LOCK).open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        wanted = fingerprint(project)
        classpath = _classpath(target)
        if classpath and fingerprint_file.exists() and fingerprint_file.read_text() == wanted:
            return classpath
        cmd = ["mvn", "-B", "-q", "-Dstyle.color=never", *extra_args(), "compile"]
        try:
            done = subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired as e:
            raise BuildError(f"{' '.join(cmd)} took more than {BUILD_TIMEOUT_S} s") from e
        if done.returncode != 0:
            tail = "\n".join((done.stdout + done.stderr).splitlines()[-40:])
            raise BuildError(f"{' '.join(cmd)} (in {project}) failed with exit code {done.returncode}:\n{tail}")
        classpath = _classpath(target)
        if classpath is None:
            raise BuildError(f"mvn compile succeeded but left no usable {target / _CLASSPATH}")
        fingerprint_file.write_text(wanted)
        return classpath


__all__ = ["MIN_JAVA", "PROJECT", "BuildError", "build", "fingerprint", "java_version", "require_toolchain"]
