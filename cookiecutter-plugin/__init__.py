"""The cookiecutter template of hermes-core plugins (`hermes plugins new`, or `cookiecutter cookiecutter-plugin`)."""
