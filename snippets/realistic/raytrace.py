"""raytrace: an object-oriented ray tracer (vectors, spheres, a camera), rendered again and again.

Written like ordinary code, without the oracle's instrumentation: the
oracle runs it as it is (no rules file beside it: distribution only).
"""
import math


class Vector:
    __slots__ = ("x", "y", "z")

    def __init__(self, x, y, z):
        self.x = x
        self.y = y
        self.z = z

    def __add__(self, other):
        return Vector(self.x + other.x, self.y + other.y, self.z + other.z)

    def __sub__(self, other):
        return Vector(self.x - other.x, self.y - other.y, self.z - other.z)

    def scale(self, k):
        return Vector(self.x * k, self.y * k, self.z * k)

    def dot(self, other):
        return self.x * other.x + self.y * other.y + self.z * other.z

    def normalized(self):
        return self.scale(1.0 / math.sqrt(self.dot(self)))


class Ray:
    def __init__(self, origin, direction):
        self.origin = origin
        self.direction = direction.normalized()

    def point_at(self, t):
        return self.origin + self.direction.scale(t)


class Sphere:
    def __init__(self, centre, radius, colour):
        self.centre = centre
        self.radius = radius
        self.colour = colour

    def intersect(self, ray):
        oc = ray.origin - self.centre
        b = oc.dot(ray.direction)
        c = oc.dot(oc) - self.radius * self.radius
        disc = b * b - c
        if disc < 0:
            return None
        t = -b - math.sqrt(disc)
        return t if t > 1e-6 else None

    def normal_at(self, point):
        return (point - self.centre).normalized()


class Scene:
    def __init__(self):
        self.objects = [
            Sphere(Vector(0, -1, 5), 1.0, (1.0, 0.2, 0.2)),
            Sphere(Vector(2, 0, 6), 1.0, (0.2, 1.0, 0.2)),
            Sphere(Vector(-2, 0, 6), 1.0, (0.2, 0.2, 1.0)),
            Sphere(Vector(0, -5001, 0), 5000.0, (0.8, 0.8, 0.8)),
        ]
        self.light = Vector(-5, 5, -5)

    def trace(self, ray):
        nearest, hit = None, None
        for obj in self.objects:
            t = obj.intersect(ray)
            if t is not None and (nearest is None or t < nearest):
                nearest, hit = t, obj
        if hit is None:
            return (0.0, 0.0, 0.0)
        return self.shade(hit, ray.point_at(nearest))

    def shade(self, obj, point):
        normal = obj.normal_at(point)
        to_light = (self.light - point).normalized()
        k = max(0.0, normal.dot(to_light))
        return tuple(c * (0.1 + 0.9 * k) for c in obj.colour)


class Camera:
    def __init__(self, width, height):
        self.width = width
        self.height = height
        self.eye = Vector(0, 0, 0)

    def render(self, scene):
        pixels = []
        for y in range(self.height):
            for x in range(self.width):
                d = Vector((x - self.width / 2) / self.width, (self.height / 2 - y) / self.height, 1)
                pixels.append(scene.trace(Ray(self.eye, d)))
        return pixels


def main():
    scene, camera = Scene(), Camera(32, 24)
    while True:
        camera.render(scene)


if __name__ == "__main__":
    main()
