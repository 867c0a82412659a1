"""gymnasium's CartPole-v1, the one environment PyTorch's reinforcement-learning examples use:
``make``, ``reset(seed=)`` and ``step`` with gymnasium's API and physics (Barto, Sutton and
Anderson's cart-pole, Euler steps of 20 ms, episodes cut at 500 steps, solved at a running
reward of 475). ``EMBER_CARTPOLE_THRESHOLD`` lowers the reward that counts as solved, so a short
run ends as the script ends when it solves the task."""

import math
import os
from types import SimpleNamespace

import numpy as np

GRAVITY, MASS_CART, MASS_POLE, HALF_LENGTH, FORCE, TAU = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
TOTAL_MASS = MASS_CART + MASS_POLE
POLE_MOMENT = MASS_POLE * HALF_LENGTH
THETA_LIMIT, X_LIMIT, MAX_STEPS = 12 * 2 * math.pi / 360, 2.4, 500


class CartPole:
    """A cart on a track balancing a pole: push left (0) or right (1); reward 1 per step."""

    def __init__(self) -> None:
        threshold = float(os.environ.get("EMBER_CARTPOLE_THRESHOLD", 475.0))
        self.spec = SimpleNamespace(id="CartPole-v1", reward_threshold=threshold,
                                    max_episode_steps=MAX_STEPS)
        self.np_random = np.random.default_rng()
        self.state = np.zeros(4)
        self.steps = 0

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.np_random = np.random.default_rng(seed)
        self.state = self.np_random.uniform(-0.05, 0.05, size=(4,))
        self.steps = 0
        return np.array(self.state, dtype=np.float32), {}

    def step(self, action):
        if action not in (0, 1):
            raise ValueError(f"CartPole's actions are 0 and 1, got {action!r}")
        x, x_dot, theta, theta_dot = self.state
        force = FORCE if action == 1 else -FORCE
        cos, sin = math.cos(theta), math.sin(theta)
        temp = (force + POLE_MOMENT * theta_dot ** 2 * sin) / TOTAL_MASS
        theta_acc = (GRAVITY * sin - cos * temp) / (
            HALF_LENGTH * (4.0 / 3.0 - MASS_POLE * cos ** 2 / TOTAL_MASS))
        x_acc = temp - POLE_MOMENT * theta_acc * cos / TOTAL_MASS
        x, x_dot = x + TAU * x_dot, x_dot + TAU * x_acc
        theta, theta_dot = theta + TAU * theta_dot, theta_dot + TAU * theta_acc
        self.state = np.array([x, x_dot, theta, theta_dot])
        self.steps += 1
        terminated = bool(abs(x) > X_LIMIT or abs(theta) > THETA_LIMIT)
        truncated = self.steps >= MAX_STEPS
        return np.array(self.state, dtype=np.float32), 1.0, terminated, truncated, {}

    def render(self):
        return None

    def close(self):
        return None


def make(env_id, render_mode=None, **kwargs):
    """The environment named env_id (only CartPole-v1 here)."""
    if env_id != "CartPole-v1":
        raise ValueError(f"only CartPole-v1 is here, not {env_id!r}")
    return CartPole()
