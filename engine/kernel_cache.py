"""Where numba keeps the machine code of Tabula's kernels, so that a cache filled when the package is built
(``pip install .``'s wheel build, ``build.spec``: :mod:`engine.precompile`) is found valid where the
package lands, and a user's first game does not wait for numba to compile.

numba files each cached function under a *locator* (``numba.core.caching``): a folder and a *stamp* of
the source that the cache index must match.  Its own locators stamp a frozen program's functions with a
hash of the executable, which a cache made before the executable existed can never match, and they
write beside the source only where that folder is writable.  :class:`KernelCacheLocator`, put first in
numba's list by :func:`install` (``engine/jit.py`` calls it before any kernel is defined), takes every
function of a module of this package:

* the stamp is a SHA-256 of the module's source file and of the package's modules it imports, directly
  or not (``engine/**/*.py``, shipped beside their bytecode in the wheel and in the PyInstaller bundle):
  a copy, a reinstall or a new mtime keeps a cache valid, a changed source does not, nor a changed
  module whose kernels it inlines (:func:`source_stamp`);
* the folder is :data:`CACHE_DIRNAME` inside the package, mirroring the source's folders
  (``engine/_kernels/games/`` for ``engine/games/*.py``): the folder a build fills and ships;
* where that folder is not writable (a system-wide install, a read-only bundle), a per-user folder for
  this version of the source (numba's user cache folder, ``tabula/...``), first seeded with the shipped
  files that it lacks.

numba still keys each entry by its own version, the Python version, the function's bytecode and the CPU
(name and features): a cache built on another machine or with another numba is ignored and the kernels
compile on first use as without it.  ``NUMBA_CACHE_DIR`` (numba's own setting) and
``NUMBA_CACHE_LOCATOR_CLASSES`` are left to numba: with either set, this locator steps aside.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import shutil
import tempfile
from pathlib import Path
from typing import Any

from numba.core import caching, config
from numba.misc.appdirs import AppDirs

__all__ = ["CACHE_DIRNAME", "PACKAGE", "KernelCacheLocator", "install", "shipped_cache_dir", "source_of"]

#: The package whose modules' kernels this locator caches (a top-level package name).
PACKAGE = "engine"
#: The cache's folder inside :data:`PACKAGE` (mirrors the package's subfolders).
CACHE_DIRNAME = "_kernels"
#: The folder holding :data:`PACKAGE` (site-packages, a checkout, a bundle's ``_internal``).
_ROOT = Path(__file__).resolve().parent.parent


def source_of(module_name: str, root: Path = _ROOT) -> Path | None:
    """The source file of ``module_name`` when it is a module of :data:`PACKAGE` whose ``.py`` file
    exists under ``root``; else ``None``."""
    parts = module_name.split(".")
    if parts[0] != PACKAGE or not all(p.isidentifier() for p in parts):
        return None
    path = root.joinpath(*parts).with_suffix(".py")
    return path if path.is_file() else None


def shipped_cache_dir(source: Path, root: Path = _ROOT) -> Path:
    """The folder inside the package that holds the cache of ``source``'s functions (``source``: a file
    under ``root/PACKAGE``)."""
    relative = source.parent.relative_to(root / PACKAGE)
    return root / PACKAGE / CACHE_DIRNAME / relative


@functools.cache
def _content_hash(path: str, mtime_ns: int, size: int) -> str:
    """SHA-256 of the file at ``path`` (hex); ``mtime_ns`` and ``size`` key the memo, so a file
    edited while the program runs is hashed again."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _file_hash(path: Path) -> str:
    """SHA-256 of ``path``'s bytes (hex), memoised while the file keeps its mtime and size."""
    st = path.stat()
    return _content_hash(str(path), st.st_mtime_ns, st.st_size)


@functools.cache
def _package_imports(path: str, mtime_ns: int, size: int, root: str) -> tuple[str, ...]:
    """The source files of the :data:`PACKAGE` modules that the file at ``path`` imports (every import
    statement, lazy and ``TYPE_CHECKING`` ones included; ``from p import m`` gives ``p`` and ``p.m``
    when they are modules); ``mtime_ns`` and ``size`` key the memo."""
    found: set[str] = set()
    tree = ast.parse(Path(path).read_bytes())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        for name in names:
            source = source_of(name, Path(root))
            if source is not None:
                found.add(str(source))
    return tuple(sorted(found))


def _package_root(source: Path) -> Path | None:
    """The folder holding :data:`PACKAGE` when ``source`` lies inside it, else ``None``."""
    for folder in source.parents:
        if folder.name == PACKAGE:
            return folder.parent
    return None


def source_stamp(source: Path) -> str:
    """The stamp numba's index must match: the content hash of ``source`` and of every module of
    :data:`PACKAGE` it imports, directly or through others.  numba inlines kernels across modules
    (the rules into a game's search), and its index checks only the stamp of the module a kernel is
    defined in: with the imports in the stamp, a change to the rules recompiles the searches built on
    them instead of loading their stale machine code."""
    root = _package_root(source.resolve())
    if root is None:
        return _file_hash(source)
    seen = {str(source.resolve())}
    todo = [source.resolve()]
    while todo:
        path = todo.pop()
        st = path.stat()
        for imported in _package_imports(str(path), st.st_mtime_ns, st.st_size, str(root)):
            if imported not in seen:
                seen.add(imported)
                todo.append(Path(imported))
    digest = hashlib.sha256()
    for path_text in sorted(seen):
        digest.update(_file_hash(Path(path_text)).encode())
    return digest.hexdigest()


def _writable(folder: Path) -> bool:
    """Whether ``folder`` exists (or can be made) and a file can be written in it (numba's own test)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError:
        return False
    return True


def _user_cache_dir(source: Path, root: Path) -> Path:
    """The per-user folder of ``source``'s cache: numba's user cache folder, ``tabula``, the source's
    folder under the package, and the source's name with its content hash (one folder per version of
    the file, so that two installs never share stale entries)."""
    user = Path(AppDirs(appname="numba", appauthor=False).user_cache_dir)  # type: ignore[no-untyped-call]
    relative = source.parent.relative_to(root / PACKAGE)
    return user / "tabula" / relative / f"{source.stem}-{source_stamp(source)[:16]}"


def _seed(shipped: Path, user: Path, stem: str) -> None:
    """Copy into ``user`` the shipped cache files of module ``stem`` (numba names them
    ``<stem>.<function>-<line>.pyXY...``) that ``user`` lacks."""
    if not shipped.is_dir():
        return
    for path in shipped.iterdir():
        target = user / path.name
        if path.name.startswith(stem + ".") and path.suffix in (".nbi", ".nbc") and not target.exists():
            try:
                shutil.copyfile(path, target)
            except OSError:
                return


class KernelCacheLocator(caching._CacheLocator):
    """numba's cache locator for the functions of :data:`PACKAGE`'s modules (module docstring)."""

    def __init__(self, py_func: Any, source: Path, folder: Path) -> None:
        self._py_func = py_func
        self._py_file = str(source)  # numba's warnings about uncachable functions name it
        self._lineno = py_func.__code__.co_firstlineno
        self._source = source
        self._folder = folder

    def get_cache_path(self) -> str:
        return str(self._folder)

    def get_source_stamp(self) -> str:
        return source_stamp(self._source)

    def get_disambiguator(self) -> str:
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> KernelCacheLocator | None:
        """The locator of ``py_func`` when it is defined in a module of :data:`PACKAGE` whose source is
        present; ``None`` (numba's own locators decide) otherwise or when numba's settings name a cache
        folder."""
        if getattr(config, "CACHE_DIR", ""):
            return None
        source = source_of(getattr(py_func, "__module__", "") or "")
        if source is None:
            return None
        shipped = shipped_cache_dir(source)
        if _writable(shipped):
            return cls(py_func, source, shipped)
        user = _user_cache_dir(source, _ROOT)
        if not _writable(user):
            return None
        _seed(shipped, user, source.stem)
        return cls(py_func, source, user)


def locator_classes() -> list[Any]:
    """numba's list of locator classes (the class attribute every function's cache consults)."""
    classes: list[Any] = caching.CacheImpl._locator_classes
    return classes


def install() -> None:
    """Put :class:`KernelCacheLocator` first in numba's locators (once; later calls do nothing).  Must run
    before a kernel is defined: numba picks a function's locator when it is decorated."""
    classes = locator_classes()
    if KernelCacheLocator not in classes:
        classes.insert(0, KernelCacheLocator)
