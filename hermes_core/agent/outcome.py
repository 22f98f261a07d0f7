"""What one turn of the reference agent came to: its answer and cost (`TurnResult`, what `Agent.ask`
returns), how its rounds ended, and the running count of what it cost."""

from __future__ import annotations

import attrs

__all__ = ["TurnResult", "Outcome", "Tally"]


@attrs.frozen
class TurnResult:
    """The answer of one turn, and what it cost."""

    text: str
    tool_calls: int
    input_tokens: int
    output_tokens: int
    cost: float | None
    stopped: str | None = None  # why the turn ended without an answer ("max_iterations"); None: it answered
    model_calls: int = 0  # the model requests the turn made


@attrs.frozen
class Outcome:
    """How a turn's rounds ended: the final text (transformed, as stored), Hermes' exit reason,
    the rounds it took, and why it stopped without an answer (None: it answered)."""

    final: str
    exit_reason: str
    rounds: int
    stopped: str | None = None


@attrs.define
class Tally:
    """What one turn has cost so far."""

    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    model_calls: int = 0

    def add(self, input_tokens: int, output_tokens: int, cost: float | None) -> None:
        self.model_calls += 1
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost

    def result(self, text: str, stopped: str | None = None) -> TurnResult:
        return TurnResult(text, self.tool_calls, self.input_tokens, self.output_tokens, self.cost, stopped,
                          self.model_calls)
