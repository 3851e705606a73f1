"""Stand-ins for what lies outside the project (LLM endpoints), served over real HTTP."""
