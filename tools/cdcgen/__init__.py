"""Sample and test data: DataWorks message writers, the demo export, the vendor documents' examples."""
