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
