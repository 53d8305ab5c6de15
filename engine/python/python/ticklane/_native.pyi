from typing import Any, Dict, Iterator, List, Optional, Tuple

class InputError(Exception):
    path: Optional[str]
    offset: Optional[int]
    message_index: Optional[int]

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

class BboBatches:
    def __iter__(self) -> Iterator[ArrowBatch]: ...
    def __next__(self) -> ArrowBatch: ...
    def summary_json(self) -> Optional[str]: ...

def bbo_batches(
    path: str,
    rows: int,
    date: Optional[str] = None,
    symbols: str = "",
    between: str = "",
    threads: int = 1,
) -> BboBatches: ...
