"""Front ends that turn source bytes into trees the matchers understand."""
