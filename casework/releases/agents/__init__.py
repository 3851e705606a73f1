"""The release detective's parts: its tools, the severity rules, its offline analyst."""
