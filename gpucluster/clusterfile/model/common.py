"""Shared building blocks of the cluster-file model: the strict base class and small value types."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

Name = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9-]{0,30}$")]
HostName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9-]{0,62}$")]
VersionPin = Annotated[str, StringConstraints(pattern=r"^[0-9]+(\.[0-9]+){1,3}(-[0-9A-Za-z.]+)?$")]
Fraction = Annotated[float, Field(ge=0.0, le=1.0)]


class Strict(BaseModel):
    """Base of every cluster-file model: unknown keys are errors and values are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)
