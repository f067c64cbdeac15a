SELECT date_trunc('day', created_at) AS day, sum(total_cents) / 100.0 AS revenue
FROM orders
WHERE status = 'PAID' AND created_at >= current_date - 1
GROUP BY 1;
