"""`gateway.platforms`: the adapters' base class (`base`) and what crosses it (`event`, `media`)."""
