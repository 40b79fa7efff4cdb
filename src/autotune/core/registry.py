"""Name -> implementation registries for the plug-in interfaces (engines, executors).

Each implementation registers itself next to its class (``@ENGINES.register``), the way
SkyPilot's ``CLOUD_REGISTRY.register`` does, so adding one is adding a module: no list to
edit. Lookups import lazily, as Ray Tune's ``create_searcher(name)`` does: the module named
like the implementation first (``autotune.engines.vllm`` for ``vllm``), then every public
module of the package, then the packages installed with an entry point in the registry's
group (``[project.entry-points."autotune.engines"]``), so optional backends are imported
only when named or listed.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import pkgutil
from collections.abc import Iterator, Mapping
from importlib.metadata import entry_points
from typing import ClassVar, Generic, Protocol, TypeVar

from autotune.errors import ConfigError

_logger = logging.getLogger(__name__)


class _Named(Protocol):
    name: ClassVar[str]


T = TypeVar("T", bound=_Named)


class Registry(Mapping[str, type[T]], Generic[T]):
    """Implementations of one interface by name (a read-only mapping; ``register`` adds).

    Args:
        kind: what is registered, for messages (``engine``, ``executor``).
        package: the package whose public modules hold the built-in implementations.
        group: the entry-point group that names implementations in other packages.
        field: the space-file or command-line field that names one, for errors.
    """

    def __init__(self, kind: str, package: str, group: str, field: str) -> None:
        self.kind = kind
        self.package = package
        self.group = group
        self.field = field
        self._classes: dict[str, type[T]] = {}
        self._scanned = False

    def register(self, cls: type[T]) -> type[T]:
        """Class decorator: register ``cls`` under its ``name``.

        Raises:
            TypeError: another class already holds that name (two plug-ins disagree).
        """
        name = cls.name
        held = self._classes.get(name)
        # The same class imported again (a module reloaded) replaces itself quietly.
        same = held is not None and (held.__module__, held.__qualname__) == (
            cls.__module__,
            cls.__qualname__,
        )
        if held is not None and not same:
            raise TypeError(
                f"{self.kind} {name!r} is registered twice: {held.__module__}.{held.__qualname__}"
                f" and {cls.__module__}.{cls.__qualname__}"
            )
        self._classes[name] = cls
        return cls

    def get_class(self, name: str) -> type[T]:
        """The implementation named ``name``, importing its module if needed.

        Raises:
            ConfigError: no implementation has that name (the message lists the known ones).
        """
        if name not in self._classes:
            self._import_named(name)
        if name not in self._classes:
            self._scan()
        try:
            return self._classes[name]
        except KeyError:
            raise ConfigError(
                f"unknown {self.kind} {name!r}; known {self.kind}s: {', '.join(self)}",
                field=self.field,
            ) from None

    def _import_named(self, name: str) -> None:
        stem = name.replace("-", "_")
        if stem.startswith("_") or not stem.isidentifier():
            return
        module = f"{self.package}.{stem}"
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # the package itself is missing: nothing to import here
            found = False
        if found:
            importlib.import_module(module)

    def _scan(self) -> None:
        """Import every public module of the package and every entry point of the group.

        A built-in module that fails to import is a bug and raises; a plug-in from another
        package that fails is logged and skipped, so one broken install does not take every
        other implementation down with it.
        """
        if self._scanned:
            return
        self._scanned = True
        package = importlib.import_module(self.package)
        for info in pkgutil.iter_modules(package.__path__):
            if not info.name.startswith("_"):
                importlib.import_module(f"{self.package}.{info.name}")
        for point in entry_points(group=self.group):
            if point.name in self._classes:
                continue
            try:
                obj = point.load()
            except Exception:
                _logger.warning(
                    "skipping %s plug-in %r (%s): it failed to import",
                    self.kind,
                    point.name,
                    point.value,
                    exc_info=True,
                )
                continue
            if isinstance(obj, type) and point.name not in self._classes:
                self.register(obj)

    def rescan(self) -> None:
        """Look for implementations again (after installing a plug-in in a running process)."""
        self._scanned = False
        self._scan()

    def __getitem__(self, name: str) -> type[T]:
        try:
            return self.get_class(name)
        except ConfigError:
            raise KeyError(name) from None

    def __iter__(self) -> Iterator[str]:
        self._scan()
        return iter(sorted(self._classes))

    def __len__(self) -> int:
        self._scan()
        return len(self._classes)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        try:
            self.get_class(name)
        except ConfigError:  # unknown: that is the answer
            return False
        return True
