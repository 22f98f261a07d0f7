"""`ctx.llm`: the gated LLM client (client), its host side (host), and what they are made of."""
