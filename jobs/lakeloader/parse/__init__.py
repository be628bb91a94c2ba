"""Parse: number the landed lines, frame them into messages, run the format's parser, write bronze and
quarantine."""
