"""What every floor of sq uses: reading and writing files, settings checks, number formats,
deep recursion, optional packages, the version."""
