"""Type stubs of augur's Python package."""
import os
from typing import Any, Optional, Union

import numpy as np
import numpy.typing as npt

from ._augur import Decision as Decision
from ._augur import Model as Model
from ._augur import Plan as Plan

__version__: str

class SpmvPlan:
    def __init__(
        self,
        a: Any,
        backend: str = "auto",
        device: int = 0,
        iterations: int = 1,
        gather: str = "auto",
        kernel: Optional[str] = None,
        model: Optional[str] = None,
        allow_other_device: bool = False,
    ) -> None: ...
    def run(self, x: Any, out: Any = None, stream: Optional[int] = None) -> Any: ...
    def __call__(self, x: Any, out: Any = None, stream: Optional[int] = None) -> Any: ...
    @property
    def decision(self) -> Decision: ...
    @property
    def kernel(self) -> str: ...
    @property
    def notes(self) -> list[str]: ...
    @property
    def setup_cost(self) -> dict[str, float]: ...
    @property
    def features(self) -> dict[str, float]: ...
    @property
    def backend(self) -> str: ...
    @property
    def dtype(self) -> np.dtype: ...
    @property
    def shape(self) -> tuple[int, int]: ...
    @property
    def nnz(self) -> int: ...

def features(a: Any) -> dict[str, float]: ...
def load_model(name_or_path: Union[str, "os.PathLike[str]"]) -> Model: ...
