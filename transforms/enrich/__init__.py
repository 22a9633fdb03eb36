"""Enrichment of documents beyond what a preparator extracts: auxiliary fields (regain's
auxiliaryField) and access-control groups (regain's CrawlerAccessController)."""
