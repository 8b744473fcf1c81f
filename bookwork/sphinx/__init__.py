"""The Sphinx extensions of the book build, listed in ``_config.yml`` (``sphinx.extra_extensions``).

Each module is one extension, loaded by its name (``bookwork.sphinx.print_book``);
``offline`` is a package of the steps that keep the site offline and light.
``assets/`` holds the files they serve or run (scripts, styles, the Node scripts run at
build time), ``latex/`` a file of the PDF build.
"""
