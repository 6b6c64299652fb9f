"""The newcomer's demo: days of synthetic traffic, sent, reconciled and summarised."""
