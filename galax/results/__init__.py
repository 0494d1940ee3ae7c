"""From runs to results: experiments over seeds, sweeps, reports, the papers' protocols
and provenance."""
