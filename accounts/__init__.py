"""The people of the house: accounts, invites, API keys, and the first-run link."""
