/**
 * The partner vocabulary: plans and their request budgets, and the two API key environments. Part of the domain
 * module (chains/domain/), which imports nothing.
 */

/** A project's plan (spec: limits). */
export const PLANS = ['free', 'starter', 'growth', 'scale', 'enterprise'] as const;
export type Plan = (typeof PLANS)[number];

/** Per-minute request budget of each plan's keys; scale and enterprise use the project's own figure (null here). */
export const PLAN_LIMITS: Readonly<Record<Plan, number | null>> = {
  free: 30,
  starter: 30,
  growth: 1000,
  scale: null,
  enterprise: null,
};

/** An API key's environment: `development` keys are the spec's beta environment. */
export const KEY_ENVIRONMENTS = ['development', 'production'] as const;
export type KeyEnvironment = (typeof KEY_ENVIRONMENTS)[number];
