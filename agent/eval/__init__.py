"""The benchmark harness: policies x task sets x seeds -> metrics, reports and plots."""
