"""A Gaussian process over configurations whose effects add up, one at a time and in pairs.

The kernel is the additive kernel of first and second order (Duvenaud, Nickisch and
Rasmussen, "Additive Gaussian Processes", 2011): a base kernel per parameter (a squared
exponential over a number's place on its scale; 1 for two equal choices, 0 otherwise; a
parameter two configurations both lack is alike, one that only one has is not), weighed per
parameter, summed (each parameter's own effect) plus the sum over every pair of their
products (a choice whose best value depends on a flag, a batch size whose best depends on a
backend). The weights, the share of the pairs and the noise are fitted by maximising the
marginal likelihood with a log-normal prior on each (the evidence decides how much each
parameter and the pairs matter: a parameter that does nothing gets a small weight, and the
search stops spending launches on it). It models the log of the objective: server effects
multiply.
"""

from __future__ import annotations

import math

import numpy as np

# scipy is imported where it is used: this module comes with the search, which every reader of
# a study's ledger imports (``autotune status``, ``report``, ``export``), and scipy's optimize,
# linalg and stats take most of a second of each such command's start.

LENGTH = 0.25  # a number's lengthscale, on its place in [0, 1]
# log-normal priors (mean of the log, spread): per-parameter weight, the pairs' share, noise
WEIGHT_PRIOR = (math.log(0.3), 1.5)
PAIRS_PRIOR = (math.log(0.3), 1.0)
NOISE_PRIOR = (math.log(0.05), 1.0)


def base_kernels(a: np.ndarray, b: np.ndarray, numeric: np.ndarray) -> np.ndarray:
    """Per parameter, the base kernel between every row of ``a`` and of ``b``: (d, n, m)."""
    out = np.empty((a.shape[1], len(a), len(b)))
    for j in range(a.shape[1]):
        x, y = a[:, j][:, None], b[:, j][None, :]
        lack = np.isnan(x) | np.isnan(y)
        both = np.isnan(x) & np.isnan(y)
        if numeric[j]:
            k = np.exp(-0.5 * ((x - y) / LENGTH) ** 2)
        else:
            k = (x == y).astype(float)
        out[j] = np.where(lack, both.astype(float), np.nan_to_num(k))
    return out


def combine(ks: np.ndarray, w: np.ndarray, pairs: float) -> tuple[np.ndarray, np.ndarray]:
    """The kernel from per-parameter kernels: constant + main effects + ``pairs`` x pairs;
    and the weighted sum of the main effects (for the gradient)."""
    s = np.tensordot(w, ks, axes=1)
    sq = np.tensordot(w**2, ks**2, axes=1)
    return 1.0 + s + pairs * 0.5 * (s * s - sq), s


class AdditiveGP:
    """The model over encoded configurations ``x`` (rows) and their objective ``y`` (larger
    is better), fitted at construction (``theta``: with these hyperparameters, as a fit
    returned them); ``numeric[j]``: whether column j is a number."""

    def __init__(
        self, x: np.ndarray, y: np.ndarray, numeric: np.ndarray, theta: np.ndarray | None = None
    ) -> None:
        self.x, self.numeric = x, numeric
        self.mean = float(np.mean(y))
        self.scale = float(np.std(y)) or 1.0
        self.y = (y - self.mean) / self.scale
        self.ks = base_kernels(x, x, numeric)
        if theta is not None:  # hyperparameters given: conditioned on these points alone
            self.theta = theta
            self._factor()
            return
        d = x.shape[1]
        start = np.array([WEIGHT_PRIOR[0]] * d + [PAIRS_PRIOR[0], NOISE_PRIOR[0]])
        bounds = [(-7.0, 2.0)] * d + [(-5.0, 1.5), (math.log(0.003), math.log(1.0))]
        from scipy.optimize import minimize

        fit = minimize(
            self._loss, start, jac=True, method="L-BFGS-B", bounds=bounds, options={"maxiter": 40}
        )
        self.theta = fit.x
        self._factor()

    def _unpack(self, theta: np.ndarray) -> tuple[np.ndarray, float, float]:
        return np.exp(theta[:-2]), float(np.exp(theta[-2])), float(np.exp(theta[-1]))

    def _loss(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """The negative log posterior of the hyperparameters and its gradient."""
        from scipy.linalg import cho_factor, cho_solve

        w, pairs, noise = self._unpack(theta)
        k, s = combine(self.ks, w, pairs)
        n = len(self.y)
        k[np.diag_indices(n)] += noise**2 + 1e-8
        try:
            c = cho_factor(k, lower=True)
        except np.linalg.LinAlgError:  # not positive definite: these weights are ruled out
            return 1e10, np.zeros_like(theta)
        alpha = cho_solve(c, self.y)
        inv = cho_solve(c, np.eye(n))
        nll = 0.5 * self.y @ alpha + np.log(np.diag(c[0])).sum()
        a = inv - np.outer(alpha, alpha)  # d(nll)/dK = a / 2
        grad = np.empty_like(theta)
        for j in range(len(w)):
            dk = w[j] * self.ks[j] * (1.0 + pairs * (s - w[j] * self.ks[j]))
            grad[j] = 0.5 * np.sum(a * dk)
        k1, _ = combine(self.ks, w, 1.0)  # 1 + s + the pairs' sum at a share of 1
        grad[-2] = 0.5 * np.sum(a * (pairs * (k1 - 1.0 - s)))
        grad[-1] = 0.5 * np.trace(a) * 2.0 * noise**2
        priors = [WEIGHT_PRIOR] * len(w) + [PAIRS_PRIOR, NOISE_PRIOR]
        for i, (mu, sd) in enumerate(priors):
            nll += 0.5 * ((theta[i] - mu) / sd) ** 2
            grad[i] += (theta[i] - mu) / sd**2
        return float(nll), grad

    def _factor(self) -> None:
        from scipy.linalg import cho_factor, cho_solve

        w, pairs, noise = self._unpack(self.theta)
        k, _ = combine(self.ks, w, pairs)
        k[np.diag_indices(len(self.y))] += noise**2 + 1e-8
        self._c = cho_factor(k, lower=True)
        self._alpha = cho_solve(self._c, self.y)
        self.noise = noise * self.scale

    @property
    def weights(self) -> np.ndarray:
        """How much each parameter's own effect matters (the fitted weights)."""
        return self._unpack(self.theta)[0]

    def predict(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The posterior mean and standard deviation of the objective (no noise) at ``x``."""
        from scipy.linalg import cho_solve

        w, pairs, _ = self._unpack(self.theta)
        ks, _ = combine(base_kernels(x, self.x, self.numeric), w, pairs)
        prior = 1.0 + w.sum() + pairs * 0.5 * (w.sum() ** 2 - (w**2).sum())
        mean = ks @ self._alpha
        v = cho_solve(self._c, ks.T)
        var = np.maximum(prior - np.einsum("ij,ji->i", ks, v), 1e-12)
        return self.mean + self.scale * mean, self.scale * np.sqrt(var)


def expected_improvement(mean: np.ndarray, sd: np.ndarray, best: float) -> np.ndarray:
    """E[max(0, f - best)] for f ~ N(mean, sd^2), elementwise."""
    from scipy.stats import norm

    z = (mean - best) / sd
    return np.asarray(sd * (z * norm.cdf(z) + norm.pdf(z)))


__all__ = ["AdditiveGP", "expected_improvement"]
