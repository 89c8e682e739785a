"""Words as data, at the bottom of the stages: the `message` every producer makes (an id, its figures,
its English), the catalogs of each language (data only: messages_en, messages_zh, and the action's
and the site's entries) and the lookup that says a message in a language.

Every stage imports this package and nothing above it, so a statement is made where it is known
(measure, analyze, documents…) and said by the report in the reader's language.
"""
