"""The versions a control plane runs tokens on: each served graph by checksum,
the graph each structure runs on, and the current one that new tokens start on."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from stateous.control.errors import StoreError
from stateous.control.store.versions import VersionRow
from stateous.model.graph import Graph, load_graph

#: Reads every version on record, newest first (bound to the store by the control plane).
Loader = Callable[[], Sequence[VersionRow]]


class Versions:
    """The graphs of the versions on record.

    A token runs on the graph of its structure: the current graph for the current structure,
    else the newest-served version of that structure (so a `timeout=`/`retries=` change
    applies to every token of the structure). A structure not known yet (served by another
    control plane since) is read from the database once, through `load`.
    """

    def __init__(self, current: Graph, load: Loader | None = None) -> None:
        self._current = current
        self._load = load
        self._lock = threading.Lock()
        self._by_checksum: dict[str, Graph] = {current.checksum: current}
        self._by_structure: dict[str, Graph] = {current.structure: current}
        #: Whether any version known declares a search key, kept as the versions
        #: change: every context change asks it.
        self.searches = bool(current.search)

    @property
    def current(self) -> Graph:
        """The graph new tokens start on."""
        return self._current

    def of(self, structure: str | None) -> Graph:
        """The graph tokens of `structure` run on (None: a token of before versions, the
        current graph)."""
        if structure is None:
            return self._current
        graph = self._by_structure.get(structure)
        if graph is None:
            self.reload()
            graph = self._by_structure.get(structure)
            if graph is None:
                raise StoreError(f"the structure {structure} has no graph on record")
        return graph

    def graphs(self) -> list[Graph]:
        """The graph of each structure known, the current one first."""
        others = [g for s, g in self._by_structure.items() if s != self._current.structure]
        return [self._current, *others]

    def by_checksum(self, checksum: str) -> Graph | None:
        """The graph served under this checksum, or None when it was never served."""
        graph = self._by_checksum.get(checksum)
        if graph is None and self._load is not None:
            self.reload()
            graph = self._by_checksum.get(checksum)
        return graph

    def make_current(self, graph: Graph) -> None:
        """Start new tokens on `graph` from now on (a replica following the holder)."""
        with self._lock:
            self._by_checksum.setdefault(graph.checksum, graph)
            self._current = graph
            self._by_structure = {**self._by_structure, graph.structure: graph}
            self.searches = any(known.search for known in self._by_structure.values())

    def reload(self) -> None:
        """Read the versions on record again (nothing without a loader)."""
        if self._load is not None:
            self.fill(self._load())

    def fill(self, rows: Sequence[VersionRow]) -> None:
        """Know every version of `rows` (newest first)."""
        with self._lock:
            by_checksum = dict(self._by_checksum)
            by_structure: dict[str, Graph] = {}
            for row in rows:
                graph = by_checksum.get(row.checksum)
                if graph is None:
                    graph = by_checksum[row.checksum] = load_graph(row.graph)
                by_structure.setdefault(row.structure, graph)
            by_structure[self._current.structure] = self._current
            self._by_checksum, self._by_structure = by_checksum, by_structure
            self.searches = any(known.search for known in by_structure.values())
