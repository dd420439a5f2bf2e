"""Type stubs of augur's Rust extension module (PyO3)."""
from typing import Optional

import numpy as np
import numpy.typing as npt

def version() -> str: ...
def make_plan(
    indptr: npt.NDArray[np.integer],
    indices: npt.NDArray[np.integer],
    data: npt.NDArray[np.floating],
    shape: tuple[int, int],
    backend_name: str = "auto",
    device: int = 0,
    iterations: int = 1,
    gather: str = "auto",
    kernel: Optional[str] = None,
    model: Optional[str] = None,
    allow_other_device: bool = False,
) -> Plan: ...
def make_plan_cuda(
    ptrs: tuple[int, int, int],
    shape: tuple[int, int],
    nnz: int,
    bits: int,
    stream: int,
    device: int = 0,
    iterations: int = 1,
    gather: str = "auto",
    kernel: Optional[str] = None,
    model: Optional[str] = None,
    allow_other_device: bool = False,
) -> Plan: ...
def features(
    indptr: npt.NDArray[np.integer], indices: npt.NDArray[np.integer], shape: tuple[int, int]
) -> dict[str, float]: ...

class Decision:
    """The kernel chosen for a matrix, and why; ``str()`` is the explanation."""

    kernel: str
    forced: bool
    iterations: int
    tier: str
    tree: str
    path: list[tuple[str, float, float, bool]]
    policy: list[tuple[str, float, float, bool]]
    leaf_samples: int
    leaf_mean_regret: float
    model: str
    vetoed: Optional[str]
    notes: list[str]

class Plan:
    def run(
        self, x: npt.NDArray[np.floating], out: Optional[npt.NDArray[np.floating]] = None
    ) -> npt.NDArray[np.floating]: ...
    def run_cuda(self, x: object, out: object, stream: int) -> None: ...
    def run_cuda_ptr(
        self, x: tuple[int, int, int, int], out: tuple[int, int, int, int], stream: int
    ) -> None: ...
    def run_torch(self, x: object, out: object, stream: Optional[int] = None) -> bool: ...
    def synchronize(self) -> None: ...
    @property
    def decision(self) -> Decision: ...
    @property
    def setup_cost(self) -> dict[str, float]: ...
    @property
    def features(self) -> dict[str, float]: ...
    @property
    def backend(self) -> str: ...
    @property
    def dtype(self) -> str: ...
    @property
    def shape(self) -> tuple[int, int]: ...
    @property
    def nnz(self) -> int: ...
    @property
    def copied(self) -> bool: ...

class Model:
    """A trained model of any domain (SpMV, collectives, attention, GEMM + collective overlap)."""

    @staticmethod
    def load(name_or_path: str) -> Model: ...
    @property
    def domain(self) -> str: ...
    @property
    def device(self) -> str: ...
    @property
    def kernels(self) -> list[str]: ...
    def export(self, format: str) -> str: ...
    def select(self, features: dict[str, float], iterations: int = 1) -> Decision: ...
    def choose(self, spec: str) -> tuple[str, list[str], list[str]]: ...
    def evidence(self, spec: str) -> tuple[int, float] | None: ...
