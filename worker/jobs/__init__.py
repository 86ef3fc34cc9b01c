"""One job end to end: claim, call the model with no transaction open, fenced apply;
plus enqueueing, the sweeper, archive rebuilds, titles and operator queries."""
