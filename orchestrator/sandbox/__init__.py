"""The sandbox: one arm's hardened container and what runs in it."""
