// Written by bench/bench_estimators.py (the numbers of its bench/RESULTS.md section); do not edit.
export const ESTIMATOR_BENCH = {
  "measured": "2026-12-06 19:21 UTC",
  "command": "python bench/bench_estimators.py",
  "games_per_family": 160,
  "reps": 2,
  "target_error": 0.05,
  "reference_budget": 1024,
  "nominal": 0.95,
  "null_nominal": 0.05,
  "methods": {
    "loo": {
      "estimator": "loo paired",
      "families": {
        "pairwise": {
          "1.0": {"rollouts_to_error": 101, "mean_error": 0.0154, "max_error_pass": 0.694, "top1": 0.963},
          "0.5": {"rollouts_to_error": 478, "mean_error": 0.0316, "max_error_pass": 0.25, "top1": 0.9},
          "0.0": {"rollouts_to_error": 727, "mean_error": 0.0406, "max_error_pass": 0.1, "top1": 0.9}
        },
        "synergy3": {
          "1.0": {"rollouts_to_error": 223, "mean_error": 0.0236, "max_error_pass": 0.569, "top1": 0.988},
          "0.5": {"rollouts_to_error": 525, "mean_error": 0.0345, "max_error_pass": 0.163, "top1": 0.969},
          "0.0": {"rollouts_to_error": 771, "mean_error": 0.0432, "max_error_pass": 0.1, "top1": 0.956}
        },
        "synergy4": {
          "1.0": {"rollouts_to_error": 266, "mean_error": 0.0249, "max_error_pass": 0.713, "top1": 1.0},
          "0.5": {"rollouts_to_error": 548, "mean_error": 0.0345, "max_error_pass": 0.2, "top1": 0.956},
          "0.0": {"rollouts_to_error": 699, "mean_error": 0.0398, "max_error_pass": 0.125, "top1": 0.963}
        },
        "redundancy": {
          "1.0": {"rollouts_to_error": 63, "mean_error": 0.0044, "max_error_pass": 0.806, "top1": 1.0},
          "0.5": {"rollouts_to_error": 142, "mean_error": 0.0207, "max_error_pass": 0.631, "top1": 0.969},
          "0.0": {"rollouts_to_error": 308, "mean_error": 0.0276, "max_error_pass": 0.475, "top1": 0.988}
        },
        "noisy": {
          "1.0": {"rollouts_to_error": 64, "mean_error": 0.0092, "max_error_pass": 0.856, "top1": 0.844},
          "0.5": {"rollouts_to_error": 384, "mean_error": 0.03, "max_error_pass": 0.275, "top1": 0.694},
          "0.0": {"rollouts_to_error": 582, "mean_error": 0.0371, "max_error_pass": 0.163, "top1": 0.706}
        }
      },
      "coverage": {
        "2": {
          "real": 0.998,
          "real_worst": 0.984,
          "real_worst_cell": "synergy3 0.0",
          "null_flag": 0.0,
          "null_flag_worst": 0.0,
          "null_flag_worst_cell": "pairwise 1.0",
          "couplings": {
            "1.0": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1600, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 1.34},
            "0.5": {"real": 0.998, "real_runs": 1600, "real_worst": 0.994, "real_worst_family": "synergy3", "null_flag": 0.0, "null_flag_runs": 1600, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 1.357},
            "0.0": {"real": 0.995, "real_runs": 1600, "real_worst": 0.984, "real_worst_family": "synergy3", "null_flag": 0.0, "null_flag_runs": 1600, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 1.373}
          },
          "under": [],
          "over_null": []
        },
        "4": {
          "real": 0.993,
          "real_worst": 0.966,
          "real_worst_cell": "synergy3 0.0",
          "null_flag": 0.001,
          "null_flag_worst": 0.003,
          "null_flag_worst_cell": "pairwise 0.0",
          "couplings": {
            "1.0": {"real": 0.998, "real_runs": 1600, "real_worst": 0.991, "real_worst_family": "synergy4", "null_flag": 0.0, "null_flag_runs": 1600, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 1.032},
            "0.5": {"real": 0.993, "real_runs": 1600, "real_worst": 0.981, "real_worst_family": "synergy4", "null_flag": 0.0, "null_flag_runs": 1600, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 1.067},
            "0.0": {"real": 0.988, "real_runs": 1600, "real_worst": 0.966, "real_worst_family": "synergy3", "null_flag": 0.002, "null_flag_runs": 1600, "null_flag_worst": 0.003, "null_flag_worst_family": "pairwise", "real_width": 1.101}
          },
          "under": [],
          "over_null": []
        },
        "8": {
          "real": 0.983,
          "real_worst": 0.966,
          "real_worst_cell": "synergy4 1.0",
          "null_flag": 0.009,
          "null_flag_worst": 0.037,
          "null_flag_worst_cell": "synergy3 0.0",
          "couplings": {
            "1.0": {"real": 0.989, "real_runs": 1600, "real_worst": 0.966, "real_worst_family": "synergy4", "null_flag": 0.0, "null_flag_runs": 1600, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 0.721},
            "0.5": {"real": 0.984, "real_runs": 1600, "real_worst": 0.975, "real_worst_family": "synergy3", "null_flag": 0.002, "null_flag_runs": 1600, "null_flag_worst": 0.006, "null_flag_worst_family": "pairwise", "real_width": 0.773},
            "0.0": {"real": 0.976, "real_runs": 1600, "real_worst": 0.969, "real_worst_family": "synergy3", "null_flag": 0.026, "null_flag_runs": 1600, "null_flag_worst": 0.037, "null_flag_worst_family": "synergy3", "real_width": 0.822}
          },
          "under": [],
          "over_null": []
        },
        "16": {
          "real": 0.976,
          "real_worst": 0.944,
          "real_worst_cell": "pairwise 0.0",
          "null_flag": 0.021,
          "null_flag_worst": 0.05,
          "null_flag_worst_cell": "pairwise 0.0",
          "couplings": {
            "1.0": {"real": 0.982, "real_runs": 1600, "real_worst": 0.966, "real_worst_family": "synergy4", "null_flag": 0.0, "null_flag_runs": 1600, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 0.467},
            "0.5": {"real": 0.979, "real_runs": 1600, "real_worst": 0.972, "real_worst_family": "noisy", "null_flag": 0.026, "null_flag_runs": 1600, "null_flag_worst": 0.044, "null_flag_worst_family": "synergy3", "real_width": 0.529},
            "0.0": {"real": 0.966, "real_runs": 1600, "real_worst": 0.944, "real_worst_family": "pairwise", "null_flag": 0.037, "null_flag_runs": 1600, "null_flag_worst": 0.05, "null_flag_worst_family": "pairwise", "real_width": 0.583}
          },
          "under": [],
          "over_null": []
        },
        "32": {
          "real": 0.958,
          "real_worst": 0.931,
          "real_worst_cell": "pairwise 0.0",
          "null_flag": 0.022,
          "null_flag_worst": 0.047,
          "null_flag_worst_cell": "pairwise 0.5",
          "couplings": {
            "1.0": {"real": 0.973, "real_runs": 1600, "real_worst": 0.953, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1600, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 0.291},
            "0.5": {"real": 0.949, "real_runs": 1600, "real_worst": 0.934, "real_worst_family": "pairwise", "null_flag": 0.034, "null_flag_runs": 1600, "null_flag_worst": 0.047, "null_flag_worst_family": "pairwise", "real_width": 0.361},
            "0.0": {"real": 0.953, "real_runs": 1600, "real_worst": 0.931, "real_worst_family": "pairwise", "null_flag": 0.034, "null_flag_runs": 1600, "null_flag_worst": 0.044, "null_flag_worst_family": "pairwise", "real_width": 0.412}
          },
          "under": [],
          "over_null": []
        },
        "64": {
          "real": 0.956,
          "real_worst": 0.941,
          "real_worst_cell": "synergy3 0.0",
          "null_flag": 0.025,
          "null_flag_worst": 0.056,
          "null_flag_worst_cell": "pairwise 0.5",
          "couplings": {
            "1.0": {"real": 0.963, "real_runs": 1600, "real_worst": 0.959, "real_worst_family": "synergy3", "null_flag": 0.0, "null_flag_runs": 1600, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 0.194},
            "0.5": {"real": 0.951, "real_runs": 1600, "real_worst": 0.941, "real_worst_family": "synergy4", "null_flag": 0.037, "null_flag_runs": 1600, "null_flag_worst": 0.056, "null_flag_worst_family": "pairwise", "real_width": 0.252},
            "0.0": {"real": 0.954, "real_runs": 1600, "real_worst": 0.941, "real_worst_family": "synergy3", "null_flag": 0.039, "null_flag_runs": 1600, "null_flag_worst": 0.056, "null_flag_worst_family": "pairwise", "real_width": 0.291}
          },
          "under": [],
          "over_null": []
        }
      }
    },
    "shapley": {
      "estimator": "shapley permutation",
      "families": {
        "pairwise": {
          "1.0": {"rollouts_to_error": 122, "mean_error": 0.0176, "max_error_pass": 0.7, "top1": 0.919},
          "0.5": {"rollouts_to_error": 530, "mean_error": 0.0374, "max_error_pass": 0.113, "top1": 0.8},
          "0.0": {"rollouts_to_error": 660, "mean_error": 0.0407, "max_error_pass": 0.125, "top1": 0.75}
        },
        "synergy3": {
          "1.0": {"rollouts_to_error": 107, "mean_error": 0.0162, "max_error_pass": 0.656, "top1": 0.925},
          "0.5": {"rollouts_to_error": 516, "mean_error": 0.0345, "max_error_pass": 0.163, "top1": 0.844},
          "0.0": {"rollouts_to_error": 654, "mean_error": 0.0398, "max_error_pass": 0.075, "top1": 0.819}
        },
        "synergy4": {
          "1.0": {"rollouts_to_error": 118, "mean_error": 0.0181, "max_error_pass": 0.637, "top1": 0.938},
          "0.5": {"rollouts_to_error": 545, "mean_error": 0.0375, "max_error_pass": 0.125, "top1": 0.844},
          "0.0": {"rollouts_to_error": 624, "mean_error": 0.0392, "max_error_pass": 0.087, "top1": 0.819}
        },
        "redundancy": {
          "1.0": {"rollouts_to_error": 136, "mean_error": 0.0182, "max_error_pass": 0.688, "top1": 0.844},
          "0.5": {"rollouts_to_error": 413, "mean_error": 0.0328, "max_error_pass": 0.2, "top1": 0.825},
          "0.0": {"rollouts_to_error": 509, "mean_error": 0.0354, "max_error_pass": 0.169, "top1": 0.762}
        },
        "noisy": {
          "1.0": {"rollouts_to_error": 75, "mean_error": 0.0135, "max_error_pass": 0.756, "top1": 0.787},
          "0.5": {"rollouts_to_error": 555, "mean_error": 0.0379, "max_error_pass": 0.125, "top1": 0.512},
          "0.0": {"rollouts_to_error": 668, "mean_error": 0.04, "max_error_pass": 0.081, "top1": 0.519}
        }
      },
      "coverage": {
        "2": {
          "real": 1.0,
          "real_worst": 1.0,
          "real_worst_cell": "pairwise 1.0",
          "null_flag": 0.0,
          "null_flag_worst": 0.0,
          "null_flag_worst_cell": "pairwise 1.0",
          "couplings": {
            "1.0": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 1.976},
            "0.5": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 1.976},
            "0.0": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 1.976}
          },
          "under": [],
          "over_null": []
        },
        "4": {
          "real": 1.0,
          "real_worst": 1.0,
          "real_worst_cell": "pairwise 1.0",
          "null_flag": 0.0,
          "null_flag_worst": 0.0,
          "null_flag_worst_cell": "pairwise 1.0",
          "couplings": {
            "1.0": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 1.436},
            "0.5": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 1.445},
            "0.0": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 1.45}
          },
          "under": [],
          "over_null": []
        },
        "8": {
          "real": 1.0,
          "real_worst": 1.0,
          "real_worst_cell": "pairwise 1.0",
          "null_flag": 0.0,
          "null_flag_worst": 0.0,
          "null_flag_worst_cell": "pairwise 1.0",
          "couplings": {
            "1.0": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 0.829},
            "0.5": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 0.85},
            "0.0": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 0.863}
          },
          "under": [],
          "over_null": []
        },
        "16": {
          "real": 0.993,
          "real_worst": 0.981,
          "real_worst_cell": "synergy3 0.0",
          "null_flag": 0.003,
          "null_flag_worst": 0.013,
          "null_flag_worst_cell": "noisy 0.0",
          "couplings": {
            "1.0": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 0.45},
            "0.5": {"real": 0.992, "real_runs": 1600, "real_worst": 0.988, "real_worst_family": "noisy", "null_flag": 0.003, "null_flag_runs": 1284, "null_flag_worst": 0.01, "null_flag_worst_family": "pairwise", "real_width": 0.483},
            "0.0": {"real": 0.986, "real_runs": 1600, "real_worst": 0.981, "real_worst_family": "synergy3", "null_flag": 0.007, "null_flag_runs": 1284, "null_flag_worst": 0.013, "null_flag_worst_family": "noisy", "real_width": 0.501}
          },
          "under": [],
          "over_null": []
        },
        "32": {
          "real": 0.971,
          "real_worst": 0.947,
          "real_worst_cell": "pairwise 0.0",
          "null_flag": 0.022,
          "null_flag_worst": 0.052,
          "null_flag_worst_cell": "pairwise 0.0",
          "couplings": {
            "1.0": {"real": 0.996, "real_runs": 1600, "real_worst": 0.991, "real_worst_family": "synergy3", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 0.239},
            "0.5": {"real": 0.962, "real_runs": 1600, "real_worst": 0.95, "real_worst_family": "synergy3", "null_flag": 0.026, "null_flag_runs": 1284, "null_flag_worst": 0.048, "null_flag_worst_family": "pairwise", "real_width": 0.29},
            "0.0": {"real": 0.955, "real_runs": 1600, "real_worst": 0.947, "real_worst_family": "pairwise", "null_flag": 0.04, "null_flag_runs": 1284, "null_flag_worst": 0.052, "null_flag_worst_family": "pairwise", "real_width": 0.317}
          },
          "under": [],
          "over_null": []
        },
        "64": {
          "real": 0.958,
          "real_worst": 0.931,
          "real_worst_cell": "redundancy 0.5",
          "null_flag": 0.029,
          "null_flag_worst": 0.062,
          "null_flag_worst_cell": "synergy4 0.5",
          "couplings": {
            "1.0": {"real": 0.978, "real_runs": 1600, "real_worst": 0.966, "real_worst_family": "synergy3", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 0.131},
            "0.5": {"real": 0.946, "real_runs": 1600, "real_worst": 0.931, "real_worst_family": "redundancy", "null_flag": 0.048, "null_flag_runs": 1284, "null_flag_worst": 0.062, "null_flag_worst_family": "synergy4", "real_width": 0.197},
            "0.0": {"real": 0.95, "real_runs": 1600, "real_worst": 0.941, "real_worst_family": "pairwise", "null_flag": 0.038, "null_flag_runs": 1284, "null_flag_worst": 0.053, "null_flag_worst_family": "redundancy", "real_width": 0.218}
          },
          "under": [],
          "over_null": []
        }
      }
    },
    "kernelshap": {
      "estimator": "kernel shap",
      "families": {
        "pairwise": {
          "1.0": {"rollouts_to_error": 338, "mean_error": 0.0292, "max_error_pass": 0.281, "top1": 0.856},
          "0.5": {"rollouts_to_error": 531, "mean_error": 0.0369, "max_error_pass": 0.131, "top1": 0.8},
          "0.0": {"rollouts_to_error": 579, "mean_error": 0.0386, "max_error_pass": 0.125, "top1": 0.825}
        },
        "synergy3": {
          "1.0": {"rollouts_to_error": 304, "mean_error": 0.0274, "max_error_pass": 0.4, "top1": 0.912},
          "0.5": {"rollouts_to_error": 448, "mean_error": 0.0338, "max_error_pass": 0.156, "top1": 0.85},
          "0.0": {"rollouts_to_error": 510, "mean_error": 0.0366, "max_error_pass": 0.138, "top1": 0.844}
        },
        "synergy4": {
          "1.0": {"rollouts_to_error": 304, "mean_error": 0.0261, "max_error_pass": 0.394, "top1": 0.95},
          "0.5": {"rollouts_to_error": 434, "mean_error": 0.0337, "max_error_pass": 0.156, "top1": 0.856},
          "0.0": {"rollouts_to_error": 483, "mean_error": 0.0355, "max_error_pass": 0.125, "top1": 0.831}
        },
        "redundancy": {
          "1.0": {"rollouts_to_error": 364, "mean_error": 0.0289, "max_error_pass": 0.294, "top1": 0.85},
          "0.5": {"rollouts_to_error": 435, "mean_error": 0.0339, "max_error_pass": 0.156, "top1": 0.775},
          "0.0": {"rollouts_to_error": 520, "mean_error": 0.0357, "max_error_pass": 0.206, "top1": 0.762}
        },
        "noisy": {
          "1.0": {"rollouts_to_error": 229, "mean_error": 0.0235, "max_error_pass": 0.588, "top1": 0.631},
          "0.5": {"rollouts_to_error": 411, "mean_error": 0.0311, "max_error_pass": 0.306, "top1": 0.55},
          "0.0": {"rollouts_to_error": 467, "mean_error": 0.0332, "max_error_pass": 0.219, "top1": 0.475}
        }
      },
      "coverage": {
        "2": {
          "real": 1.0,
          "real_worst": 1.0,
          "real_worst_cell": "pairwise 1.0",
          "null_flag": 0.0,
          "null_flag_worst": 0.0,
          "null_flag_worst_cell": "pairwise 1.0",
          "couplings": {
            "1.0": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 4.406},
            "0.5": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 4.406},
            "0.0": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 4.406}
          },
          "under": [],
          "over_null": []
        },
        "4": {
          "real": 1.0,
          "real_worst": 1.0,
          "real_worst_cell": "pairwise 1.0",
          "null_flag": 0.0,
          "null_flag_worst": 0.0,
          "null_flag_worst_cell": "pairwise 1.0",
          "couplings": {
            "1.0": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 3.198},
            "0.5": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 3.2},
            "0.0": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 3.201}
          },
          "under": [],
          "over_null": []
        },
        "8": {
          "real": 1.0,
          "real_worst": 1.0,
          "real_worst_cell": "pairwise 1.0",
          "null_flag": 0.0,
          "null_flag_worst": 0.0,
          "null_flag_worst_cell": "pairwise 1.0",
          "couplings": {
            "1.0": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 1.84},
            "0.5": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 1.849},
            "0.0": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 1.853}
          },
          "under": [],
          "over_null": []
        },
        "16": {
          "real": 0.999,
          "real_worst": 0.997,
          "real_worst_cell": "synergy4 1.0",
          "null_flag": 0.0,
          "null_flag_worst": 0.003,
          "null_flag_worst_cell": "synergy3 0.5",
          "couplings": {
            "1.0": {"real": 0.999, "real_runs": 1600, "real_worst": 0.997, "real_worst_family": "synergy4", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 1.001},
            "0.5": {"real": 0.999, "real_runs": 1600, "real_worst": 0.997, "real_worst_family": "synergy4", "null_flag": 0.001, "null_flag_runs": 1284, "null_flag_worst": 0.003, "null_flag_worst_family": "synergy3", "real_width": 1.019},
            "0.0": {"real": 0.999, "real_runs": 1600, "real_worst": 0.997, "real_worst_family": "synergy4", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 1.027}
          },
          "under": [],
          "over_null": []
        },
        "32": {
          "real": 0.989,
          "real_worst": 0.975,
          "real_worst_cell": "pairwise 0.0",
          "null_flag": 0.017,
          "null_flag_worst": 0.033,
          "null_flag_worst_cell": "pairwise 0.5",
          "couplings": {
            "1.0": {"real": 0.994, "real_runs": 1600, "real_worst": 0.984, "real_worst_family": "redundancy", "null_flag": 0.009, "null_flag_runs": 1284, "null_flag_worst": 0.024, "null_flag_worst_family": "redundancy", "real_width": 0.542},
            "0.5": {"real": 0.988, "real_runs": 1600, "real_worst": 0.984, "real_worst_family": "redundancy", "null_flag": 0.02, "null_flag_runs": 1284, "null_flag_worst": 0.033, "null_flag_worst_family": "pairwise", "real_width": 0.575},
            "0.0": {"real": 0.984, "real_runs": 1600, "real_worst": 0.975, "real_worst_family": "pairwise", "null_flag": 0.021, "null_flag_runs": 1284, "null_flag_worst": 0.028, "null_flag_worst_family": "synergy3", "real_width": 0.588}
          },
          "under": [],
          "over_null": []
        },
        "64": {
          "real": 0.962,
          "real_worst": 0.938,
          "real_worst_cell": "redundancy 0.0",
          "null_flag": 0.037,
          "null_flag_worst": 0.049,
          "null_flag_worst_cell": "redundancy 1.0",
          "couplings": {
            "1.0": {"real": 0.978, "real_runs": 1600, "real_worst": 0.966, "real_worst_family": "redundancy", "null_flag": 0.031, "null_flag_runs": 1284, "null_flag_worst": 0.049, "null_flag_worst_family": "redundancy", "real_width": 0.306},
            "0.5": {"real": 0.956, "real_runs": 1600, "real_worst": 0.95, "real_worst_family": "synergy4", "null_flag": 0.036, "null_flag_runs": 1284, "null_flag_worst": 0.044, "null_flag_worst_family": "noisy", "real_width": 0.357},
            "0.0": {"real": 0.953, "real_runs": 1600, "real_worst": 0.938, "real_worst_family": "redundancy", "null_flag": 0.043, "null_flag_runs": 1284, "null_flag_worst": 0.048, "null_flag_worst_family": "noisy", "real_width": 0.374}
          },
          "under": [],
          "over_null": []
        }
      }
    },
    "shapley2": {
      "estimator": "2-additive",
      "families": {
        "pairwise": {
          "1.0": {"rollouts_to_error": 78, "mean_error": 0.0141, "max_error_pass": 0.969, "top1": 0.919},
          "0.5": {"rollouts_to_error": 178, "mean_error": 0.0204, "max_error_pass": 0.706, "top1": 0.894},
          "0.0": {"rollouts_to_error": 214, "mean_error": 0.0222, "max_error_pass": 0.606, "top1": 0.869}
        },
        "synergy3": {
          "1.0": {"rollouts_to_error": 99, "mean_error": 0.0233, "max_error_pass": 0.519, "top1": 0.938},
          "0.5": {"rollouts_to_error": 183, "mean_error": 0.0266, "max_error_pass": 0.344, "top1": 0.912},
          "0.0": {"rollouts_to_error": 198, "mean_error": 0.0276, "max_error_pass": 0.344, "top1": 0.919}
        },
        "synergy4": {
          "1.0": {"rollouts_to_error": 180, "mean_error": 0.0375, "max_error_pass": 0.081, "top1": 0.9},
          "0.5": {"rollouts_to_error": 290, "mean_error": 0.0398, "max_error_pass": 0.069, "top1": 0.887},
          "0.0": {"rollouts_to_error": 335, "mean_error": 0.0402, "max_error_pass": 0.037, "top1": 0.912}
        },
        "redundancy": {
          "1.0": {"rollouts_to_error": 107, "mean_error": 0.024, "max_error_pass": 0.494, "top1": 0.881},
          "0.5": {"rollouts_to_error": 182, "mean_error": 0.0266, "max_error_pass": 0.306, "top1": 0.894},
          "0.0": {"rollouts_to_error": 203, "mean_error": 0.0285, "max_error_pass": 0.338, "top1": 0.9}
        },
        "noisy": {
          "1.0": {"rollouts_to_error": 95, "mean_error": 0.0149, "max_error_pass": 0.938, "top1": 0.8},
          "0.5": {"rollouts_to_error": 185, "mean_error": 0.0222, "max_error_pass": 0.575, "top1": 0.681},
          "0.0": {"rollouts_to_error": 224, "mean_error": 0.0234, "max_error_pass": 0.544, "top1": 0.656}
        }
      },
      "coverage": {
        "2": {
          "real": 1.0,
          "real_worst": 1.0,
          "real_worst_cell": "pairwise 1.0",
          "null_flag": 0.0,
          "null_flag_worst": 0.0,
          "null_flag_worst_cell": "pairwise 1.0",
          "couplings": {
            "1.0": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 1.976},
            "0.5": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 1.976},
            "0.0": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 1.976}
          },
          "under": [],
          "over_null": []
        },
        "4": {
          "real": 1.0,
          "real_worst": 1.0,
          "real_worst_cell": "pairwise 1.0",
          "null_flag": 0.0,
          "null_flag_worst": 0.0,
          "null_flag_worst_cell": "pairwise 1.0",
          "couplings": {
            "1.0": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 1.434},
            "0.5": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 1.434},
            "0.0": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 1.434}
          },
          "under": [],
          "over_null": []
        },
        "8": {
          "real": 1.0,
          "real_worst": 1.0,
          "real_worst_cell": "pairwise 1.0",
          "null_flag": 0.0,
          "null_flag_worst": 0.0,
          "null_flag_worst_cell": "pairwise 1.0",
          "couplings": {
            "1.0": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 0.823},
            "0.5": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 0.823},
            "0.0": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 0.823}
          },
          "under": [],
          "over_null": []
        },
        "16": {
          "real": 1.0,
          "real_worst": 1.0,
          "real_worst_cell": "pairwise 1.0",
          "null_flag": 0.0,
          "null_flag_worst": 0.0,
          "null_flag_worst_cell": "pairwise 1.0",
          "couplings": {
            "1.0": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 0.442},
            "0.5": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 0.442},
            "0.0": {"real": 1.0, "real_runs": 1600, "real_worst": 1.0, "real_worst_family": "pairwise", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 0.442}
          },
          "under": [],
          "over_null": []
        },
        "32": {
          "real": 0.993,
          "real_worst": 0.966,
          "real_worst_cell": "synergy4 0.0",
          "null_flag": 0.0,
          "null_flag_worst": 0.004,
          "null_flag_worst_cell": "noisy 0.0",
          "couplings": {
            "1.0": {"real": 0.999, "real_runs": 1600, "real_worst": 0.997, "real_worst_family": "synergy4", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 0.23},
            "0.5": {"real": 0.993, "real_runs": 1600, "real_worst": 0.981, "real_worst_family": "synergy4", "null_flag": 0.0, "null_flag_runs": 1284, "null_flag_worst": 0.0, "null_flag_worst_family": "pairwise", "real_width": 0.23},
            "0.0": {"real": 0.988, "real_runs": 1600, "real_worst": 0.966, "real_worst_family": "synergy4", "null_flag": 0.001, "null_flag_runs": 1284, "null_flag_worst": 0.004, "null_flag_worst_family": "noisy", "real_width": 0.23}
          },
          "under": [],
          "over_null": []
        },
        "64": {
          "real": 0.895,
          "real_worst": 0.656,
          "real_worst_cell": "synergy4 0.0",
          "null_flag": 0.008,
          "null_flag_worst": 0.031,
          "null_flag_worst_cell": "noisy 0.0",
          "couplings": {
            "1.0": {"real": 0.916, "real_runs": 1600, "real_worst": 0.706, "real_worst_family": "synergy4", "null_flag": 0.001, "null_flag_runs": 1284, "null_flag_worst": 0.003, "null_flag_worst_family": "synergy3", "real_width": 0.118},
            "0.5": {"real": 0.892, "real_runs": 1600, "real_worst": 0.7, "real_worst_family": "synergy4", "null_flag": 0.008, "null_flag_runs": 1284, "null_flag_worst": 0.019, "null_flag_worst_family": "synergy4", "real_width": 0.119},
            "0.0": {"real": 0.876, "real_runs": 1600, "real_worst": 0.656, "real_worst_family": "synergy4", "null_flag": 0.016, "null_flag_runs": 1284, "null_flag_worst": 0.031, "null_flag_worst_family": "noisy", "real_width": 0.121}
          },
          "under": ["synergy3 0.5", "synergy3 0.0", "synergy4 1.0", "synergy4 0.5", "synergy4 0.0", "redundancy 0.5", "redundancy 0.0"],
          "over_null": []
        }
      }
    }
  }
};
