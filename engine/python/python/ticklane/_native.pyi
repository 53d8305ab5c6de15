import os
from typing import Any, Dict, Iterator, List, Optional, Tuple

class InputError(Exception):
    path: Optional[str]
    offset: Optional[int]
    message_index: Optional[int]
    summary: Optional[Dict[str, Any]]

class LossDeclared(Exception):
    messages: int
    ranges: List[Tuple[int, int]]
    summary: Dict[str, Any]

class ArrowBatch:
    @property
    def num_rows(self) -> int: ...
    @property
    def column_names(self) -> List[str]: ...
    def __len__(self) -> int: ...
    def __arrow_c_schema__(self) -> Any: ...
    def __arrow_c_array__(self, requested_schema: Any = None) -> Tuple[Any, Any]: ...
    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any: ...

class TableBatches:
    def __iter__(self) -> Iterator[List[Tuple[str, ArrowBatch]]]: ...
    def __next__(self) -> List[Tuple[str, ArrowBatch]]: ...
    def summary_json(self) -> Optional[str]: ...

def table_batches(
    path: str,
    rows: int,
    tables: List[str],
    date: Optional[str] = None,
    symbols: str = "",
    between: str = "",
    threads: int = 1,
    price: str = "int",
    depth: int = 10,
) -> TableBatches: ...

def replay_files(
    path: str,
    *,
    bbo_out: Optional[str] = None,
    book_out: Optional[str] = None,
    depth: int = 10,
    dbn_out: Optional[str] = None,
    schema: str = "mbo",
    dataset: Optional[str] = None,
    date: Optional[str] = None,
    sample: Optional[str] = None,
    sample_out: Optional[str] = None,
    sample_depth: int = 10,
    symbols: str = "",
    between: str = "",
    parquet_out: Optional[str] = None,
    parquet_schema: str = "bbo",
    summary_json: Optional[str] = None,
    recover_lengths: bool = False,
    threads: int = 1,
) -> str: ...

class SnapshotError(ValueError): ...

class SlotUnreadable(Exception):
    slots: List[Tuple[int, str]]
    readable: Any

class Snapshot:
    def __init__(self, path: "os.PathLike[str] | str") -> None: ...
    @property
    def path(self) -> str: ...
    @property
    def header(self) -> Dict[str, Any]: ...
    @property
    def replaced(self) -> bool: ...
    def reopen_if_replaced(self) -> bool: ...
    def __len__(self) -> int: ...
    def books(self, *, depth: Optional[int] = None) -> List[Dict[str, Any]]: ...
    def book(self, symbol: str, *, depth: Optional[int] = None) -> Optional[Dict[str, Any]]: ...
    def to_arrow(
        self, table: str = "books", *, depth: Optional[int] = None, price: str = "int"
    ) -> ArrowBatch: ...

class SubscribeError(ConnectionError): ...

class Subscription:
    @property
    def server(self) -> str: ...
    @property
    def symbols(self) -> List[str]: ...
    def __iter__(self) -> Iterator[Dict[str, Any]]: ...
    def __next__(self) -> Dict[str, Any]: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Subscription": ...
    def __exit__(self, *exc: Any) -> None: ...

def subscribe(
    server: str,
    symbols: List[str],
    *,
    account: str = "ticklane",
    password: Optional[str] = None,
    tls: bool = False,
    ca: "Optional[os.PathLike[str] | str]" = None,
    server_name: Optional[str] = None,
    max_attempts: Optional[int] = None,
    backoff_base_ms: int = 100,
    backoff_cap_ms: int = 30000,
) -> Subscription: ...
