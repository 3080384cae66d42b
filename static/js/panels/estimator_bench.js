// Written by bench/bench_estimators.py (the numbers of its bench/RESULTS.md section); do not edit.
export const ESTIMATOR_BENCH = {
  "measured": "2026-12-01 21:21 UTC",
  "command": "python bench/bench_estimators.py",
  "games_per_family": 160,
  "target_error": 0.05,
  "reference_budget": 1024,
  "coverage_floor": 0.93,
  "methods": {
    "loo": {
      "estimator": "loo paired",
      "families": {
        "pairwise": {
          "1.0": {
            "rollouts_to_error": 101,
            "mean_error": 0.0154,
            "max_error_pass": 0.694,
            "top1": 0.963
          },
          "0.5": {
            "rollouts_to_error": 478,
            "mean_error": 0.0316,
            "max_error_pass": 0.25,
            "top1": 0.9
          },
          "0.0": {
            "rollouts_to_error": 727,
            "mean_error": 0.0406,
            "max_error_pass": 0.1,
            "top1": 0.9
          }
        },
        "synergy3": {
          "1.0": {
            "rollouts_to_error": 223,
            "mean_error": 0.0236,
            "max_error_pass": 0.569,
            "top1": 0.988
          },
          "0.5": {
            "rollouts_to_error": 525,
            "mean_error": 0.0345,
            "max_error_pass": 0.163,
            "top1": 0.969
          },
          "0.0": {
            "rollouts_to_error": 771,
            "mean_error": 0.0432,
            "max_error_pass": 0.1,
            "top1": 0.956
          }
        },
        "synergy4": {
          "1.0": {
            "rollouts_to_error": 266,
            "mean_error": 0.0249,
            "max_error_pass": 0.713,
            "top1": 1.0
          },
          "0.5": {
            "rollouts_to_error": 548,
            "mean_error": 0.0345,
            "max_error_pass": 0.2,
            "top1": 0.956
          },
          "0.0": {
            "rollouts_to_error": 699,
            "mean_error": 0.0398,
            "max_error_pass": 0.125,
            "top1": 0.963
          }
        },
        "redundancy": {
          "1.0": {
            "rollouts_to_error": 63,
            "mean_error": 0.0044,
            "max_error_pass": 0.806,
            "top1": 1.0
          },
          "0.5": {
            "rollouts_to_error": 142,
            "mean_error": 0.0207,
            "max_error_pass": 0.631,
            "top1": 0.969
          },
          "0.0": {
            "rollouts_to_error": 308,
            "mean_error": 0.0276,
            "max_error_pass": 0.475,
            "top1": 0.988
          }
        },
        "noisy": {
          "1.0": {
            "rollouts_to_error": 64,
            "mean_error": 0.0092,
            "max_error_pass": 0.856,
            "top1": 0.844
          },
          "0.5": {
            "rollouts_to_error": 384,
            "mean_error": 0.03,
            "max_error_pass": 0.275,
            "top1": 0.694
          },
          "0.0": {
            "rollouts_to_error": 582,
            "mean_error": 0.0371,
            "max_error_pass": 0.163,
            "top1": 0.706
          }
        }
      },
      "coverage": {
        "4": {
          "real": 0.995,
          "real_wilson": [
            0.991,
            0.997
          ],
          "real_worst": 0.969,
          "real_worst_cell": "synergy3 0.0",
          "null": 1.0
        },
        "8": {
          "real": 0.984,
          "real_wilson": [
            0.978,
            0.988
          ],
          "real_worst": 0.956,
          "real_worst_cell": "synergy4 0.0",
          "null": 0.99
        },
        "16": {
          "real": 0.978,
          "real_wilson": [
            0.972,
            0.983
          ],
          "real_worst": 0.963,
          "real_worst_cell": "pairwise 0.0",
          "null": 0.976
        },
        "32": {
          "real": 0.955,
          "real_wilson": [
            0.946,
            0.963
          ],
          "real_worst": 0.912,
          "real_worst_cell": "pairwise 0.5",
          "null": 0.977
        }
      }
    },
    "shapley": {
      "estimator": "shapley permutation",
      "families": {
        "pairwise": {
          "1.0": {
            "rollouts_to_error": 122,
            "mean_error": 0.0176,
            "max_error_pass": 0.7,
            "top1": 0.919
          },
          "0.5": {
            "rollouts_to_error": 530,
            "mean_error": 0.0374,
            "max_error_pass": 0.113,
            "top1": 0.8
          },
          "0.0": {
            "rollouts_to_error": 660,
            "mean_error": 0.0407,
            "max_error_pass": 0.125,
            "top1": 0.75
          }
        },
        "synergy3": {
          "1.0": {
            "rollouts_to_error": 107,
            "mean_error": 0.0162,
            "max_error_pass": 0.656,
            "top1": 0.925
          },
          "0.5": {
            "rollouts_to_error": 516,
            "mean_error": 0.0345,
            "max_error_pass": 0.163,
            "top1": 0.844
          },
          "0.0": {
            "rollouts_to_error": 654,
            "mean_error": 0.0398,
            "max_error_pass": 0.075,
            "top1": 0.819
          }
        },
        "synergy4": {
          "1.0": {
            "rollouts_to_error": 118,
            "mean_error": 0.0181,
            "max_error_pass": 0.637,
            "top1": 0.938
          },
          "0.5": {
            "rollouts_to_error": 545,
            "mean_error": 0.0375,
            "max_error_pass": 0.125,
            "top1": 0.844
          },
          "0.0": {
            "rollouts_to_error": 624,
            "mean_error": 0.0392,
            "max_error_pass": 0.087,
            "top1": 0.819
          }
        },
        "redundancy": {
          "1.0": {
            "rollouts_to_error": 136,
            "mean_error": 0.0182,
            "max_error_pass": 0.688,
            "top1": 0.844
          },
          "0.5": {
            "rollouts_to_error": 413,
            "mean_error": 0.0328,
            "max_error_pass": 0.2,
            "top1": 0.825
          },
          "0.0": {
            "rollouts_to_error": 509,
            "mean_error": 0.0354,
            "max_error_pass": 0.169,
            "top1": 0.762
          }
        },
        "noisy": {
          "1.0": {
            "rollouts_to_error": 75,
            "mean_error": 0.0135,
            "max_error_pass": 0.756,
            "top1": 0.787
          },
          "0.5": {
            "rollouts_to_error": 555,
            "mean_error": 0.0379,
            "max_error_pass": 0.125,
            "top1": 0.512
          },
          "0.0": {
            "rollouts_to_error": 668,
            "mean_error": 0.04,
            "max_error_pass": 0.081,
            "top1": 0.519
          }
        }
      },
      "coverage": {
        "4": {
          "real": 0.805,
          "real_wilson": [
            0.788,
            0.82
          ],
          "real_worst": 0.287,
          "real_worst_cell": "noisy 1.0",
          "null": 0.997
        },
        "8": {
          "real": 0.89,
          "real_wilson": [
            0.876,
            0.902
          ],
          "real_worst": 0.512,
          "real_worst_cell": "noisy 1.0",
          "null": 0.973
        },
        "16": {
          "real": 0.921,
          "real_wilson": [
            0.909,
            0.931
          ],
          "real_worst": 0.713,
          "real_worst_cell": "noisy 1.0",
          "null": 0.972
        },
        "32": {
          "real": 0.928,
          "real_wilson": [
            0.917,
            0.938
          ],
          "real_worst": 0.831,
          "real_worst_cell": "noisy 1.0",
          "null": 0.968
        }
      }
    },
    "kernelshap": {
      "estimator": "kernel shap",
      "families": {
        "pairwise": {
          "1.0": {
            "rollouts_to_error": 338,
            "mean_error": 0.0292,
            "max_error_pass": 0.281,
            "top1": 0.856
          },
          "0.5": {
            "rollouts_to_error": 531,
            "mean_error": 0.0369,
            "max_error_pass": 0.131,
            "top1": 0.794
          },
          "0.0": {
            "rollouts_to_error": 579,
            "mean_error": 0.0386,
            "max_error_pass": 0.125,
            "top1": 0.831
          }
        },
        "synergy3": {
          "1.0": {
            "rollouts_to_error": 304,
            "mean_error": 0.0274,
            "max_error_pass": 0.4,
            "top1": 0.912
          },
          "0.5": {
            "rollouts_to_error": 448,
            "mean_error": 0.0338,
            "max_error_pass": 0.156,
            "top1": 0.856
          },
          "0.0": {
            "rollouts_to_error": 510,
            "mean_error": 0.0366,
            "max_error_pass": 0.138,
            "top1": 0.85
          }
        },
        "synergy4": {
          "1.0": {
            "rollouts_to_error": 304,
            "mean_error": 0.0261,
            "max_error_pass": 0.394,
            "top1": 0.956
          },
          "0.5": {
            "rollouts_to_error": 434,
            "mean_error": 0.0337,
            "max_error_pass": 0.156,
            "top1": 0.863
          },
          "0.0": {
            "rollouts_to_error": 483,
            "mean_error": 0.0355,
            "max_error_pass": 0.125,
            "top1": 0.819
          }
        },
        "redundancy": {
          "1.0": {
            "rollouts_to_error": 364,
            "mean_error": 0.0289,
            "max_error_pass": 0.294,
            "top1": 0.844
          },
          "0.5": {
            "rollouts_to_error": 435,
            "mean_error": 0.0339,
            "max_error_pass": 0.156,
            "top1": 0.769
          },
          "0.0": {
            "rollouts_to_error": 520,
            "mean_error": 0.0357,
            "max_error_pass": 0.206,
            "top1": 0.762
          }
        },
        "noisy": {
          "1.0": {
            "rollouts_to_error": 229,
            "mean_error": 0.0235,
            "max_error_pass": 0.588,
            "top1": 0.625
          },
          "0.5": {
            "rollouts_to_error": 411,
            "mean_error": 0.0311,
            "max_error_pass": 0.306,
            "top1": 0.55
          },
          "0.0": {
            "rollouts_to_error": 467,
            "mean_error": 0.0332,
            "max_error_pass": 0.219,
            "top1": 0.487
          }
        }
      },
      "coverage": {
        "4": {
          "real": 0.906,
          "real_wilson": [
            0.893,
            0.917
          ],
          "real_worst": 0.681,
          "real_worst_cell": "noisy 1.0",
          "null": 0.966
        },
        "8": {
          "real": 0.927,
          "real_wilson": [
            0.916,
            0.936
          ],
          "real_worst": 0.844,
          "real_worst_cell": "noisy 1.0",
          "null": 0.912
        },
        "16": {
          "real": 0.941,
          "real_wilson": [
            0.931,
            0.95
          ],
          "real_worst": 0.894,
          "real_worst_cell": "synergy3 1.0",
          "null": 0.912
        },
        "32": {
          "real": 0.94,
          "real_wilson": [
            0.93,
            0.949
          ],
          "real_worst": 0.9,
          "real_worst_cell": "noisy 1.0",
          "null": 0.942
        }
      }
    },
    "shapley2": {
      "estimator": "2-additive",
      "families": {
        "pairwise": {
          "1.0": {
            "rollouts_to_error": 78,
            "mean_error": 0.0141,
            "max_error_pass": 0.969,
            "top1": 0.919
          },
          "0.5": {
            "rollouts_to_error": 178,
            "mean_error": 0.0204,
            "max_error_pass": 0.706,
            "top1": 0.894
          },
          "0.0": {
            "rollouts_to_error": 214,
            "mean_error": 0.0222,
            "max_error_pass": 0.606,
            "top1": 0.869
          }
        },
        "synergy3": {
          "1.0": {
            "rollouts_to_error": 99,
            "mean_error": 0.0233,
            "max_error_pass": 0.519,
            "top1": 0.938
          },
          "0.5": {
            "rollouts_to_error": 183,
            "mean_error": 0.0266,
            "max_error_pass": 0.344,
            "top1": 0.912
          },
          "0.0": {
            "rollouts_to_error": 198,
            "mean_error": 0.0276,
            "max_error_pass": 0.344,
            "top1": 0.919
          }
        },
        "synergy4": {
          "1.0": {
            "rollouts_to_error": 180,
            "mean_error": 0.0375,
            "max_error_pass": 0.081,
            "top1": 0.9
          },
          "0.5": {
            "rollouts_to_error": 290,
            "mean_error": 0.0398,
            "max_error_pass": 0.069,
            "top1": 0.887
          },
          "0.0": {
            "rollouts_to_error": 335,
            "mean_error": 0.0402,
            "max_error_pass": 0.037,
            "top1": 0.912
          }
        },
        "redundancy": {
          "1.0": {
            "rollouts_to_error": 107,
            "mean_error": 0.024,
            "max_error_pass": 0.494,
            "top1": 0.881
          },
          "0.5": {
            "rollouts_to_error": 182,
            "mean_error": 0.0266,
            "max_error_pass": 0.306,
            "top1": 0.894
          },
          "0.0": {
            "rollouts_to_error": 203,
            "mean_error": 0.0285,
            "max_error_pass": 0.338,
            "top1": 0.9
          }
        },
        "noisy": {
          "1.0": {
            "rollouts_to_error": 95,
            "mean_error": 0.0149,
            "max_error_pass": 0.938,
            "top1": 0.8
          },
          "0.5": {
            "rollouts_to_error": 185,
            "mean_error": 0.0222,
            "max_error_pass": 0.575,
            "top1": 0.681
          },
          "0.0": {
            "rollouts_to_error": 224,
            "mean_error": 0.0234,
            "max_error_pass": 0.544,
            "top1": 0.656
          }
        }
      },
      "coverage": {
        "4": {
          "real": 0.94,
          "real_wilson": [
            0.93,
            0.949
          ],
          "real_worst": 0.9,
          "real_worst_cell": "synergy4 1.0",
          "null": 0.958
        },
        "8": {
          "real": 0.927,
          "real_wilson": [
            0.916,
            0.937
          ],
          "real_worst": 0.825,
          "real_worst_cell": "synergy4 1.0",
          "null": 0.937
        },
        "16": {
          "real": 0.898,
          "real_wilson": [
            0.886,
            0.91
          ],
          "real_worst": 0.706,
          "real_worst_cell": "synergy4 1.0",
          "null": 0.939
        },
        "32": {
          "real": 0.843,
          "real_wilson": [
            0.828,
            0.857
          ],
          "real_worst": 0.531,
          "real_worst_cell": "synergy4 1.0",
          "null": 0.949
        }
      }
    }
  }
};
