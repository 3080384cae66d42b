"""Helpers shared by the importer tests."""

from swarmscope.importers import ImportResult, SourceFile, read_files


def read_paths(*paths) -> ImportResult:
    """Import files from disk through the registry; fails the test if any file failed."""
    result = read_files([SourceFile(str(path), path.read_bytes()) for path in paths])
    assert not result.failed, result.failed
    return result


def edge_set(trace, kind: str) -> set[tuple[str, str]]:
    """(src, dst) of the trace's edges of type `kind`."""
    return {(e.src, e.dst) for e in trace.edges if e.type == kind}


def span_id(short: str) -> str:
    """A 16-hex-digit span id from its significant digits."""
    return short.rjust(16, "0")
