"""A consumer of a queue with ``large_payloads``: read (and delete) under the queue's prefix, the
environment that tells its handler where payloads are, and the layer holding
``constructs_lib.large_payloads``.

The layer is ``backoff_layer.PAYLOADS_LAYER_ID``: the backoff layer's files plus
``large_payloads.py``. A consumer that also has ``retry_backoff`` gets that one layer instead of
the backoff layer (it holds ``constructs_lib.backoff`` too); consumers without large payloads keep
the backoff layer, whose asset hash is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Stack
from aws_cdk import aws_lambda as lambda_

from constructs_lib import limits
from constructs_lib.consumer import backoff_layer
from constructs_lib.errors import Problem
from constructs_lib.queue import naming, payload_grants
from constructs_lib.queue.payloads import PayloadStore


@dataclass(frozen=True)
class PayloadAccess:
    """What ``large_payloads`` does to one consumer, decided before anything is built."""

    store: PayloadStore
    function: lambda_.IFunction
    settable: lambda_.Function | None
    """The function whose environment and layers the app sets; None: imported, or a version."""
    delete: bool
    layer: bool
    """Whether this consumer gets the payloads layer (a Python function of the app that lacks
    it, unless ``LargePayloads(layer=False)``)."""

    holds_layer: bool = False
    """Whether the function already has the payloads layer (another queue's consumer gave it);
    with ``layer``, whether it holds the package: a backoff layer would be a second copy."""

    def apply(self) -> None:
        """Grant, set the environment and add the layer (call once the consumer's checks
        passed)."""
        shown = self.function
        if self.function.role is None and self.settable is None:
            payload_grants.warn_without_role(self.store, self.function, self.delete, shown)
        else:
            payload_grants.grant_read(self.store, self.function, self.delete, shown)
        payload_grants.set_environment(
            self.settable, shown, payload_grants.consumer_environment(self.store, self.delete)
        )
        if self.layer and self.settable is not None:
            self.settable.add_layers(
                backoff_layer.backoff_layer(Stack.of(self.settable), payloads=True)
            )


def plan(
    store: PayloadStore | None, function: lambda_.IFunction
) -> tuple[PayloadAccess | None, list[Problem]]:
    """The access of ``function`` to ``store`` (None without large payloads), and the problems
    that prevent it. A dead-letter consumer deletes as the source's consumers do."""
    if store is None:
        return None, []
    settable = backoff_layer.settable_function(function)
    delete = store.settings.consumers_delete
    if not store.settings.layer or settable is None or not backoff_layer.is_python(settable):
        return PayloadAccess(store, function, settable, delete, layer=False), []
    layers = backoff_layer.function_layers(settable)
    if backoff_layer.holds_layer(settable, layers, backoff_layer.PAYLOADS_LAYER_ID):
        return PayloadAccess(store, function, settable, delete, False, holds_layer=True), []
    if len(layers) < limits.LAYERS_PER_FUNCTION_MAX:
        return PayloadAccess(store, function, settable, delete, layer=True), []
    problem = Problem(
        "large_payloads.layer",
        True,
        f"needs a layer on {naming.display(function)}, which already has {len(layers)}: "
        f"Lambda allows {limits.LAYERS_PER_FUNCTION_MAX} layers per function",
        "bundle constructs_lib ("
        + ", ".join(backoff_layer.PAYLOAD_RUNTIME_FILES)
        + ") with the function or one of its layers and pass LargePayloads(layer=False)",
    )
    return None, [problem]
