"""theorylab.landscape: loss landscapes, curvature and the implicit bias of SGD (``000_7523275b422019f8.txt``).

Exact and stochastic Hessian / Gauss-Newton traces, gradient-noise covariance and per-sample gradients
(``hessian``, torch.func); manifolds of minimisers, the Riemannian flow of Thm 3.3 and vectorised SGD chains
(``manifold``); function-preserving embeddings (``embed``); AM-GM rebalancing (``canonical``); the §E
flat-vs-memorising pair (``flat_transfer``).
"""

from theorylab.landscape.canonical import balance_rescalings, balanced_value
from theorylab.landscape.embed import (
    deepen_transformer,
    mlp_forward,
    random_mlp,
    random_transformer,
    transformer_forward,
    widen_mlp,
    widen_transformer,
)
from theorylab.landscape.flat_transfer import DyckTask, OneLayerSolution, sol1, sol2
from theorylab.landscape.hessian import (
    TraceEstimate,
    cross_entropy_loss,
    flatten_params,
    gradient_covariance,
    hessian_matrix,
    per_sample_grads,
    trace_estimator,
    trace_ggn,
    trace_hessian,
    trace_hessian_loop,
)
from theorylab.landscape.manifold import (
    MinimizerManifold,
    ProductLogitToy,
    riemannian_flow,
    sgd_chains,
    toy_flow_closed_form,
)
from theorylab.landscape.models import TwoLayerSoftmax

__all__ = [
    "DyckTask",
    "MinimizerManifold",
    "OneLayerSolution",
    "ProductLogitToy",
    "TraceEstimate",
    "TwoLayerSoftmax",
    "balance_rescalings",
    "balanced_value",
    "cross_entropy_loss",
    "deepen_transformer",
    "flatten_params",
    "gradient_covariance",
    "hessian_matrix",
    "mlp_forward",
    "per_sample_grads",
    "random_mlp",
    "random_transformer",
    "riemannian_flow",
    "sgd_chains",
    "sol1",
    "sol2",
    "toy_flow_closed_form",
    "trace_estimator",
    "trace_ggn",
    "trace_hessian",
    "trace_hessian_loop",
    "transformer_forward",
    "widen_mlp",
    "widen_transformer",
]
